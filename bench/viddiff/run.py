"""`convis bench viddiff run --dataset DIR`: convis's predictions for a VidDiffBench-shaped folder, in its format.

For each sample the two videos (trimmed to ``frames_trim``, VidDiff's ``vid[slice(start, end)]``: frame numbers,
end excluded, passed on as frame numbers so no frame is gained or lost through seconds) go to ``Engine.diff``:
closed mode asks about each difference labelled 'a' or 'b' (VidDiff's ``make_text_prompts`` keeps only those),
open mode asks for up to ``n_differences_open_prediction``. Frames are sampled at the
domain's rate VidDiff's baselines use (``DOMAIN_FPS``), or by the LMM family's own rule with ``--frames family``.
Predictions are written as ``{sample_key: {...}}`` (what VidDiff's ``log_input_preds`` writes), which
``convis bench viddiff --pred`` reads back; closed-mode accuracy is printed at the end, with a note that it is
not comparable with VidDiff's leaderboard (``closed_comparability``: the leaderboard asked other models another
way).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from bench.viddiff.data import DOMAIN_FPS, VidDiffSample
from retrieval.core.errors import ConvisError

FRAME_CHOICES = ("domain", "family")


@dataclass
class RunOutput:
    predictions: dict[str, dict] = field(default_factory=dict)
    details: dict[str, dict] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)  # sample key -> why it was not asked
    model_calls: int = 0


def sample_frames(sample: VidDiffSample, probe) -> list[tuple[int, int] | None]:
    """Each video's [first, stop) frame numbers, as VidDiff's ``vid[slice(*frames_trim)]`` takes them (the end
    excluded; None or negative bounds as a Python slice reads them); None: the whole video. The domain's rate
    then takes every ``int(fps / rate)``-th frame from ``first`` (``_subsample_video``)."""
    ranges = []
    for path, trim in sample.videos:
        if trim is None:
            ranges.append(None)
            continue
        count = probe(path).frame_count
        first, stop = slice(*trim).indices(count)[:2]
        if stop <= first:
            raise SampleSkipped(f"frames_trim {list(trim)} of {path.name} holds no frame (it has {count})")
        ranges.append((first, stop))
    return ranges


class SampleSkipped(ConvisError):
    """A sample that cannot be asked as it stands (its videos or labels): recorded, and the run goes on."""

    exit_code, http_status = 2, 400


def sample_rate(sample: VidDiffSample, frames: str) -> float | None:
    """The frame rate a sample is asked at: its domain's (VidDiff's baselines), or None for the family's rule."""
    if frames == "family":
        return None
    if sample.domain not in DOMAIN_FPS:
        raise SampleSkipped(f"domain {sample.domain!r} has no VidDiff frame rate (known: {', '.join(DOMAIN_FPS)}); "
                       "use --frames family")
    return float(DOMAIN_FPS[sample.domain])


@dataclass(frozen=True)
class Asking:
    """How every sample is asked: ``mode`` closed or open, the LMM ``reranker``, its ``scoring`` (expected or
    argmax), both orders (``symmetric``), and ``frames`` (one of FRAME_CHOICES)."""

    mode: str
    reranker: str
    scoring: str = "expected"
    symmetric: bool = False
    frames: str = "domain"


def closed_comparability(asking: Asking) -> str:
    """Why a closed run's accuracy is convis's own number: VidDiff's leaderboard was measured another way."""
    reading = "the letter it writes" if asking.scoring == "greedy" else "P(a) / (P(a) + P(b)) of its next token"
    return ("closed-mode accuracy from this run is not comparable with VidDiff's leaderboard: its closed runs ask "
            "every statement of a sample in one prompt (prompt_template_mode_2) and read a JSON answer "
            "(malformed ones rewritten by an LLM), with the videos as image sequences or each model's own video "
            "input, of other models (GPT-4o, Gemini-1.5-Pro, Claude-3.5-Sonnet, Qwen2-VL-7B, LLaVA-Video-7B); "
            f"this run asks {asking.reranker} one statement at a time about the two clips joined as one video "
            f"and reads {reading}")


def run_samples(engine, samples: list[VidDiffSample], asking: Asking,
                progress: Callable[[int, int], None] | None = None, out: RunOutput | None = None) -> RunOutput:
    """Ask ``engine.diff`` about every usable sample; a sample that cannot be asked is recorded with its reason.

    Answers go into ``out`` as they come, so a run stopped by the model (it cannot load, the GPU fails) keeps
    what it had asked."""
    from retrieval.media.video_decoder import VideoDecoder

    decoder, skippable = VideoDecoder(), _skippable()
    out = out if out is not None else RunOutput()
    for done, sample in enumerate(samples, 1):
        try:
            out.predictions[sample.sample_key] = _ask(engine, decoder, sample, asking, out)
        except skippable as exc:  # one sample's videos or labels at fault: the others still run
            out.skipped[sample.sample_key] = " ".join(str(exc).split()) or type(exc).__name__
        if progress is not None:
            progress(done, len(samples))
    return out


def _ask(engine, decoder, sample: VidDiffSample, asking: Asking, out: RunOutput) -> dict:
    if sample.problems:
        raise SampleSkipped("; ".join(sample.problems))
    if len(sample.videos) != 2:
        raise SampleSkipped(f"{len(sample.videos)} videos, need 2")
    (a, _), (b, _) = sample.videos
    a_frames, b_frames = sample_frames(sample, decoder.probe)
    statements = {k: sample.differences[k] for k, label in sample.gt.items()
                  if label in ("a", "b") and k in sample.differences} if asking.mode == "closed" else None
    if statements == {}:
        raise SampleSkipped("no difference labelled 'a' or 'b' to ask about")
    from retrieval.api import DiffRequest

    result = engine.diff(DiffRequest(a, b, action=sample.action_description, statements=statements,
                                     most=sample.n_open if asking.mode == "open" else None, reranker=asking.reranker,
                                     mode=asking.scoring, symmetric=asking.symmetric,
                                     fps=sample_rate(sample, asking.frames), a_frames=a_frames,
                                     b_frames=b_frames))
    out.details[sample.sample_key] = result.to_dict()
    out.model_calls += result.model_calls
    return result.predictions()


def _skippable() -> tuple[type[BaseException], ...]:
    """What one sample's videos or labels can get wrong (a model that cannot load, or a bug, stops the run)."""
    from rerankers.prompts.diff import DiffInputError
    from retrieval.media.frames import DecodeError
    from retrieval.search.anchor import AnchorError

    return (SampleSkipped, DiffInputError, DecodeError, AnchorError, OSError)


def write_outputs(out: RunOutput, folder: Path, mode: str, comparability: str | None = None) -> dict[str, Path]:
    """``predictions_<mode>.json`` (VidDiff's format) and ``details_<mode>.json`` (every answer and probability,
    and ``comparability``: what the numbers can be set beside)."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = {"predictions": folder / f"predictions_{mode}.json", "details": folder / f"details_{mode}.json"}
    paths["predictions"].write_text(json.dumps(out.predictions, indent=2), encoding="utf-8")
    note = {} if comparability is None else {"comparability": comparability}
    paths["details"].write_text(json.dumps({"samples": out.details, "skipped": out.skipped,
                                            "model_calls": out.model_calls, **note}, indent=2), encoding="utf-8")
    return paths
