"""One long file on every core: decode workers sharing one file, wall seconds and each worker's peak memory."""

from __future__ import annotations

from dataclasses import dataclass

from bench.perf.section import Check, Section, one_table
from bench.perf.targets import TARGET_TWO_WORKER_SPEEDUP, TARGET_WORKER_MB


@dataclass(frozen=True)
class ScalingResult:
    video: str
    workers: int  # decode worker processes sharing the one file
    segment_s: float
    units: int
    windows: int  # decode tasks the file was cut into
    frames: int  # sampled frames decoded
    seconds: float  # wall, file handed over to last window back
    worker_peak_mb: float  # the highest peak RSS (VmHWM) of any one worker
    speedup: float = 0.0  # one worker's seconds over these
    peak_rss_mb: float = 0.0  # the measuring process itself


HEAD = ["video", "workers", "segment s", "units", "windows", "frames", "seconds", "speed-up", "worker peak RSS MB"]


def _row(r: ScalingResult) -> list:
    return [r.video, r.workers, f"{r.segment_s:g}", r.units, r.windows, r.frames, f"{r.seconds:.2f}",
            f"{r.speedup:.2f}x", f"{r.worker_peak_mb:.0f}"]


def scaling_checks(rows: list[ScalingResult]) -> list[Check]:
    found = []
    two = next((r for r in rows if r.workers == 2), None)
    if two is not None:
        found.append((f"one long file: 2 decode workers >= {TARGET_TWO_WORKER_SPEEDUP:g}x faster than 1",
                      f"{two.speedup:.2f}x ({two.seconds:.2f} s against {two.seconds * two.speedup:.2f} s)",
                      two.speedup >= TARGET_TWO_WORKER_SPEEDUP))
    if rows:
        peak = max(r.worker_peak_mb for r in rows)
        found.append((f"one long file: every decode worker peaks below {TARGET_WORKER_MB / 1024:g} GB RSS",
                      f"{peak:.0f} MB at most", peak < TARGET_WORKER_MB))
    return found


SECTION = Section(
    "scaling", "one long file decoded by 1..N workers (N: the cores): wall seconds, speed-up and the largest "
               "worker's peak RSS (--long-video, else a generated 10-minute 720p file; --segment units, default 10 s)",
    ScalingResult, "bench.perf.scaling:run_scaling", one_table("One long file on every core", HEAD, _row),
    checks=scaling_checks, needs_clips=False)
