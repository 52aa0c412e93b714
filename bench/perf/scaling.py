"""One long file decoded by 1..N workers: the scaling curve of parallel decoding inside a file.

The decode stage alone, as an index run drives it (``LocalExecutor`` over ``ProcessDistributor`` workers, the
file cut into windows by ``unit_windows``), with no model: wall seconds from handing the file over to its
last window, and the highest peak RSS (VmHWM) of any one worker (``PeakRss.child_mb``). Each worker count
is measured in a fresh process, its workers started and their imports done before the clock starts (an
index run starts them while it loads its models). Without ``--long-video`` a 10-minute 1280x720 H.264 file
with a keyframe every 250 frames is generated (about a minute), in ``--segment`` units (default 10 s).
"""

from __future__ import annotations

import os
import time
from dataclasses import replace
from pathlib import Path

from bench.perf.config import Footage, PerfConfig, Progress
from bench.perf.footage import write_test_video
from bench.perf.measuring import measure
from bench.perf.memory import PeakRss, _tree
from bench.perf.sections.scaling import ScalingResult

DEFAULT_SEGMENT_S = 10.0
GENERATED = (1280, 720, 600.0)  # width, height, seconds: x264's default keyframe interval (GOP 250)
FRAMES_PER_UNIT = 8  # the fast protocol's frames a unit


def run_scaling(config: PerfConfig, footage: Footage, progress: Progress) -> list[ScalingResult]:
    video = config.long_video
    if video is None:
        width, height, seconds = (320, 180, 130.0) if config.smoke else GENERATED
        progress(f"scaling: generating a {seconds / 60:g}-minute {width}x{height} video")
        video = write_test_video(footage.scratch / "scaling.mp4", width, height, seconds)
    segment = config.segment or DEFAULT_SEGMENT_S
    rows = []
    for workers in range(1, max(1, os.cpu_count() or 1) + 1):
        progress(f"scaling: {workers} worker(s)")
        row = min((measure(decode_with_workers, video, workers, segment, isolate=config.isolate)
                   for _ in range(max(1, config.repeat))), key=lambda r: r.seconds)  # the least disturbed run
        rows.append(row)
    return [_with_speedup(r, rows[0]) for r in rows]


def _with_speedup(row: ScalingResult, one: ScalingResult) -> ScalingResult:
    return replace(row, speedup=round(one.seconds / row.seconds, 3) if row.seconds else 0.0)


def decode_with_workers(video: Path, workers: int, segment: float) -> ScalingResult:
    from retrieval.core.sampling import as_spec
    from retrieval.media.scan import FoundFile
    from retrieval.pipeline.distribute import ProcessDistributor
    from retrieval.pipeline.local import LocalExecutor
    from retrieval.pipeline.stages import DECODER_MODULES, DecodeJob, FileJob, unit_windows

    stat = video.stat()
    job = FileJob(DecodeJob(FoundFile(str(video), video.name, stat.st_size, stat.st_mtime),
                            (as_spec(FRAMES_PER_UNIT),), segment), ())
    distributor = ProcessDistributor(workers, timeout=3600.0, keep_warm=True)  # as an index run's
    try:
        distributor.start(DECODER_MODULES)
        _wait_for_workers(workers)
        with PeakRss() as peak:
            started = time.perf_counter()
            [(_, result)] = list(LocalExecutor(distributor).embed([job], []))
            seconds = time.perf_counter() - started
    finally:
        distributor.close()
    if isinstance(result, BaseException):
        raise RuntimeError(f"decoding {video.name} failed: {result}")
    frames = sum(len(f.indices) for fs in result.frames.values() for f in fs)
    windows = len(unit_windows(result.info, result.spans, job.decode.frame_specs, workers))
    return ScalingResult(video.name, workers, segment, len(result.spans), windows, frames, round(seconds, 3),
                         round(peak.child_mb, 1))


def _wait_for_workers(count: int, timeout: float = 60.0) -> None:
    """Until ``count`` worker processes run (beside the forkserver), and a moment for their imports."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and len(_tree(os.getpid())) < count + 2:
        time.sleep(0.05)
    time.sleep(2.0)
