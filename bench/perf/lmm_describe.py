"""Caption speed of each LMM family on the describe path: every unit asked the caption and the five concept
requests (at most 128 new tokens each), one request a generation (``describe_many``, as convis asked before),
every question of the batch in one generation, each row with its video (``describe_each`` with sharing off,
rerankers.bulk), and every question after one pass over its unit's video (``describe_each``, what the describe
pass uses now: rerankers.unit_prefix for the Qwen-VL families, the one generation for the others)."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from bench.perf import gpu, real_shape
from bench.perf.config import Footage, PerfConfig, Progress
from bench.perf.lmm_rerank import decoded
from bench.perf.sections.describe import DescribeResult
from rerankers.factory import create_reranker
from rerankers.prompts.describe import describe_requests

MAX_NEW_TOKENS = 128
SMOKE_TOKENS = 8
WAYS = ("one request a call", "every question at once", "one vision pass a unit")


class GenerateCounter:
    """Wraps ``model.generate``: counts its calls and the new tokens it wrote (a row's padding after its end is not
    a token written)."""

    def __init__(self, network, pad_id: int | None):
        self.inner, self.pad_id = network.generate, pad_id
        self.calls = self.tokens = 0

    def __call__(self, *args, **kwargs):
        out = self.inner(*args, **kwargs)
        sequences = out.sequences if hasattr(out, "sequences") else out
        new = sequences[:, kwargs["input_ids"].shape[1]:]
        self.calls += 1
        self.tokens += int((new != self.pad_id).sum()) if self.pad_id is not None else new.numel()
        return out


def asked(model, way: str):
    """The model as ``way`` asks: sharing a unit's video only for the one-vision-pass way."""
    return model.asked_with(share=way == WAYS[2])


def ask(model, frames, questions, way: str) -> int:
    """Every unit asked every question, ``way`` (``model`` from ``asked``); the answers given."""
    if way in WAYS[1:]:
        return sum(map(len, model.describe_each(frames, [questions] * len(frames), prepared=True)))
    return sum(len(model.describe_many(frames, request, tokens, prepared=True)) for request, tokens in questions)


def _counted(model, counter: GenerateCounter) -> tuple[int, int]:
    """Decodings and new tokens so far: ``generate``'s calls and those of the one-vision-pass path."""
    return counter.calls + model.work["unit_batches"], counter.tokens + model.work["new_tokens"]


def measure_family(family: str, folder: Path, clips: Sequence[Path], shape: str, tokens: int,
                   ways: Sequence[str] = WAYS, profile: bool = True) -> list[DescribeResult]:
    model = create_reranker(str(folder))
    frames = decoded(clips, model)
    questions = [(request, min(budget, tokens)) for request, budget in describe_requests().values()]
    counter = GenerateCounter(model.model, model.processor.tokenizer.pad_token_id)
    model.model.generate = counter
    rows = [_row(family, model, counter, frames, questions, shape, way, profile) for way in ways]
    del model, counter
    gpu.release()
    return rows


def _row(family: str, model, counter: GenerateCounter, frames, questions, shape: str, way: str,
         profile: bool = True) -> DescribeResult:
    model = asked(model, way)
    ask(model, frames[:1], questions[:2], way)  # warm-up: kernels chosen, caches allocated (no static cache here)
    calls, written = _counted(model, counter)
    seconds, peak = gpu.timed(lambda: ask(model, frames, questions, way))
    calls, written = (after - before for after, before in zip(_counted(model, counter), (calls, written), strict=True))
    share = gpu.kernel_share(lambda: ask(model, frames, questions, way)) if profile else None
    return DescribeResult(family, shape, str(model.device), way, model.batch_size, len(frames),
                          len(frames) * len(questions), written, calls, seconds, peak, share)


def run_lmm_describe(config: PerfConfig, footage: Footage, progress: Progress) -> list[DescribeResult]:
    """Every family describing the first eight clips (two in smoke runs, with 8 new tokens an answer)."""
    clips = footage.clips[: 2 if config.smoke else 8]
    tokens = SMOKE_TOKENS if config.smoke else MAX_NEW_TOKENS
    what = f"describe, {len(clips)} units x 6 questions, <= {tokens} new tokens"
    return [row for family, folder in real_shape.each_checkpoint(config.shape, footage.scratch, progress, what)
            for row in measure_family(family, folder, clips, config.shape, tokens)]
