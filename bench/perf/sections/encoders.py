"""Image-text towers: frames/s of PE-Core and SigLIP2 on frames at their input size (``--shape 7b``: the released
architectures with random weights, on a GPU)."""

from __future__ import annotations

from bench.perf.config import Footage, PerfConfig, Progress
from bench.perf.encoders import FAMILIES, EncoderResult, measure_encoder
from bench.perf.section import Section, maybe, one_table, rounded


def run_encoders(config: PerfConfig, footage: Footage, progress: Progress) -> list[EncoderResult]:
    rows = []
    for family in FAMILIES:
        progress(f"encoders: {family} ({config.shape})")
        rows.append(measure_encoder(family, config.shape, footage.scratch / "encoders"))
    return rows


HEAD = ["family", "shape", "model", "device", "dtype", "frames", "seconds", "frames/s", "GPU GB"]


def _row(r: EncoderResult) -> list:
    return [r.family, r.shape, r.model, r.device, r.dtype, r.frames, f"{r.seconds:.2f}", f"{r.frames_per_s:.1f}",
            maybe(r.gpu_gb)]


SECTION = Section(
    "encoders", "PE-Core and SigLIP2 image towers on frames at their input size: frames/s and GPU memory (--shape "
                "7b: the released architectures with random weights, on a GPU)",
    EncoderResult, run_encoders, one_table("Image-text towers (pe, siglip2)", HEAD, _row),
    derived=rounded(frames_per_s=1), needs_clips=False)
