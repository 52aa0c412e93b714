"""`convis bench perf --sections lmm`: each LMM family in one line, its model loaded once.

Pairs: one anchor against the other clips under the ConViS concepts at the family's batch and sharing
(``lmm_rerank``'s run), its kernel share profiled and its operations counted (``gpu.flops``) for the MFU. Captions:
every question of the units in one generation (``lmm_describe``'s run). From files: the units described as an index
run describes them, decoding each batch before asking it (``describe_units``, before the feed) and with the next
batch decoded and prepared while the model runs (``LocalDescriber``, retrieval.lmm.feed), GPU busy share of both.

``--shape real`` (or ``7b``) builds the real-shape random checkpoints on a GPU (bench/perf/real_shape.py); the
default tiny ones run anywhere, their GPU-only columns n/a on the CPU.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from bench.perf import gpu, lmm_describe, lmm_rerank, real_shape
from bench.perf.config import Footage, PerfConfig, Progress
from bench.perf.sections.lmm import LmmResult
from rerankers.factory import create_reranker
from rerankers.prompts.describe import describe_requests
from retrieval.core.concepts import CONVIS_CONCEPTS
from retrieval.lmm.captioning import LocalDescriber, describe_units
from retrieval.media.video_decoder import VideoDecoder


@dataclass(frozen=True)
class FileUnit:
    """A whole clip file as a unit to describe (the catalog's UnitRow, for the bench)."""

    path: str
    start: float = 0.0
    end: float | None = None


def run_lmm(config: PerfConfig, footage: Footage, progress: Progress) -> list[LmmResult]:
    """Every family: the first clip against the next eight and eight units described (smoke: two candidates, two
    concepts, two units of 8 new tokens an answer)."""
    shape = real_shape.canonical(config.shape)
    clips = footage.clips[:9]
    if config.smoke:
        clips = [clips[0], *(clips[1:] * 2)[:2]]
    concepts = list(CONVIS_CONCEPTS.values())[: 2 if config.smoke else None]
    tokens = lmm_describe.SMOKE_TOKENS if config.smoke else lmm_describe.MAX_NEW_TOKENS
    units = footage.clips[: 2 if config.smoke else 8]
    what = f"lmm, {len(clips) - 1} candidates x {len(concepts)} concepts, {len(units)} units"
    return [measure_family(family, folder, clips, units, shape, concepts, tokens)
            for family, folder in real_shape.each_checkpoint(shape, footage.scratch, progress, what)]


def measure_family(family: str, folder: Path, clips: Sequence[Path], units: Sequence[Path], shape: str,
                   concepts: Sequence[str], tokens: int) -> LmmResult:
    model = create_reranker(str(folder))
    row = measured(family, model, clips, units, shape, concepts, tokens)
    del model
    gpu.release()
    return row


def measured(family: str, model, clips: Sequence[Path], units: Sequence[Path], shape: str, concepts: Sequence[str],
             tokens: int) -> LmmResult:
    import torch
    import transformers

    frames = lmm_rerank.decoded(clips, model)
    share = model.share if lmm_rerank.takes_share(model) else None
    pairs = lmm_rerank.pair_row(family, model, frames, shape, concepts, share)
    operations = gpu.flops(lambda: lmm_rerank.score_all(model, lmm_rerank.fresh(frames), concepts))
    questions = [(request, min(budget, tokens)) for request, budget in describe_requests().values()]
    counter = lmm_describe.GenerateCounter(model.model, model.processor.tokenizer.pad_token_id)
    model.model.generate = counter
    captions = lmm_describe._row(family, model, counter, lmm_rerank.decoded(units, model), questions, shape,
                                 lmm_describe.WAYS[2])
    unfed, fed = from_files(model, units, questions)
    card = gpu.card_name()
    peaks = [p for p in (pairs.gpu_peak_gb, captions.gpu_peak_gb) if p is not None]
    return LmmResult(family, shape, str(model.device), card, model.batch_size, pairs.pairs, pairs.seconds,
                     captions.tokens, captions.seconds, operations, gpu.mfu(operations, pairs.seconds, card),
                     pairs.kernel_share, captions.kernel_share, unfed[0], fed[0], unfed[1], fed[1],
                     max(peaks) if peaks else None, torch.__version__, transformers.__version__,
                     str(getattr(model.model.config, "_attn_implementation", None) or "-"))


def from_files(model, units: Sequence[Path], questions) -> tuple[tuple[float, float | None], ...]:
    """(seconds, GPU busy share) of describing ``units`` from their files: each batch decoded then asked, and fed."""
    root = Path(units[0]).parent
    requests = {str(i): question for i, question in enumerate(questions)}
    work = [(FileUnit(Path(unit).name), requests) for unit in units]
    size = max(1, model.batch_size)

    def unfed():
        decoder = VideoDecoder()
        for start in range(0, len(work), size):
            _check(describe_units(model, decoder, root, work[start:start + size]))

    def fed():
        _check(list(LocalDescriber(model, root)(work)))

    return tuple(_timed(way) for way in (unfed, fed))


def _timed(way) -> tuple[float, float | None]:
    started = time.perf_counter()
    way()
    return time.perf_counter() - started, gpu.kernel_share(way)


def _check(described) -> None:
    failed = Counter(d.reason for d in described if d.reason)
    if failed:
        raise RuntimeError(f"units not described: {dict(failed)}")
