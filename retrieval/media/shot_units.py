"""Shot units of one file: find its shots and sample each unit's frames, in one decode where memory allows.

Shot detection must see every frame, so it decodes the whole file (PyAV, threaded, in order). While it
does, each frame is also converted to the size every frame spec wants and kept, when the whole file's
kept frames fit ``ONE_PASS_BYTES`` (estimated from the first frame and the frame count): the units'
frames are then picked from memory, and the file is decoded once. A longer file keeps nothing and
its units are sampled afterwards by ``VideoDecoder`` (seeking, as for fixed units): two decodes, with
memory bounded by the sampling window instead of the file's length.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Iterator, Sequence

import numpy as np

from retrieval.core.defaults import MiB
from retrieval.core.errors import one_line
from retrieval.core.pixels import DEFAULT_SHORT_SIDE, DecoderScaled
from retrieval.core.sampling import FrameSpec
from retrieval.core.segmentation import ShotRule
from retrieval.media.frames import (
    DecodeError,
    Frames,
    Span,
    VideoInfo,
    check_frame_count,
    check_not_empty,
    span_frame_indices,
)
from retrieval.media.pyav_backend import PyAVBackend, frame_converter
from retrieval.media.shots import Shot, get_detector, shots_from_cuts

# Frames one decode may keep for sampling while it detects shots: 1,000 frames of 224x398 px, the fast
# protocol's size for 16:9 video (40 s at 25 fps; half that with two indexers of other sizes). Past that the file
# is sampled by a second, seeking decode. Half a decode worker's memory (WORKER_MEMORY_MB): the units' frames
# are copied out of what is kept before it is let go.
ONE_PASS_BYTES = 256 * MiB


@dataclass
class ShotCut:
    """A file cut into shot units: ``frames`` (per spec, one Frames per unit) when they were sampled in the
    same decode, else None (sample ``units`` with ``VideoDecoder.sample(cut=...)``)."""

    info: VideoInfo  # frame_count: the frames the decode found
    units: list[Span]
    frames: dict[FrameSpec, list[Frames]] | None
    detector: str
    seconds: float  # decode + detection


def shot_spans(shots: Sequence[Shot]) -> list[Span]:
    """Units from shots, with their exact frames and what starts each."""
    return [Span(i, shot.start, shot.end, (shot.start_frame, shot.end_frame),
                 "start" if i == 0 else ("split" if shot.split else "cut"), shot.confidence)
            for i, shot in enumerate(shots)]


def cut_shots(path: str | Path, rule: ShotRule, specs: Sequence[FrameSpec], short_side: int = DEFAULT_SHORT_SIDE,
              device: str | None = None, budget: int | None = None, threads: int | None = None) -> ShotCut:
    """Detect the shots of ``path`` with ``rule`` (a resolved detector) and, within ``budget`` bytes (default
    ``ONE_PASS_BYTES``), sample every spec's frames of each unit in the same decode; ``threads``: FFmpeg's
    decoding threads (None: its choice). Raises DecodeError with the reason."""
    path = Path(path)
    check_not_empty(path)
    began = time.perf_counter()
    detector = get_detector(rule.detector, device=device)
    times: list[float] = []
    try:
        info = PyAVBackend().probe(path)
        keep = _Keeper(info, specs, short_side, ONE_PASS_BYTES if budget is None else budget)
        cuts = detector.detect(_small_frames(path, info, detector, keep, times, threads), info.fps)
    except DecodeError:
        raise
    except Exception as exc:  # PyAV and the detectors raise many types; each is this file's failure
        failed = DecodeError(f"shot detection failed: {one_line(exc, 300)}")
        # out of memory (the CPU's, or a GPU's for TransNetV2) may pass: a later run tries the file again
        failed.transient = isinstance(exc, MemoryError) or "out of memory" in str(exc).lower()
        raise failed from None
    if not times:
        raise DecodeError("no frame could be decoded")
    info = replace(info, frame_count=len(times))
    units = shot_spans(shots_from_cuts(cuts, len(times), info.fps, rule.min_seconds, rule.max_seconds))
    frames = keep.sample(info, units, np.asarray(times)) if keep.keeping else None
    return ShotCut(info, units, frames, detector.name, time.perf_counter() - began)


def _small_frames(path: Path, info: VideoInfo, detector, keep: "_Keeper", times: list[float],
                  threads: int | None) -> Iterator[np.ndarray]:
    """Every frame at the detector's size, in order; each is offered to ``keep`` first and its time noted."""
    import av

    width, height = detector.frame_size(info.width, info.height)
    if info.rotation in (90, 270):
        width, height = height, width  # scaled in the coded orientation: the detector needs no upright picture
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        stream.thread_type = "AUTO"
        if threads:
            stream.codec_context.thread_count = threads
        origin = float(stream.start_time * stream.time_base) if stream.start_time and stream.time_base else 0.0
        for frame in container.decode(stream):
            keep.offer(frame)
            times.append(frame.time - origin if frame.time is not None else len(times) / info.fps)
            yield frame.to_ndarray(width=width, height=height, format="rgb24", interpolation=detector.interpolation)


class _Keeper:
    """Keeps every decoded frame at each frame spec's size while the whole file's fit the budget."""

    def __init__(self, info: VideoInfo, specs: Sequence[FrameSpec], short_side: int, budget: int):
        self.resize_of = {spec: spec.resize if spec.resize is not None else DecoderScaled(short_side)
                          for spec in specs}
        self.convert = {r: frame_converter(info, r) for r in dict.fromkeys(self.resize_of.values())}
        self.kept: dict[object, list[np.ndarray]] = {r: [] for r in self.convert}
        self.expected, self.budget = info.frame_count, budget
        self.keeping = bool(specs)

    def offer(self, frame) -> None:
        if not self.keeping:
            return
        for resize, convert in self.convert.items():
            self.kept[resize].append(convert(frame)[0])
        # the whole file's frames at this size: by the frame count the container states, or those held so far
        held = len(next(iter(self.kept.values())))
        if sum(kept[-1].nbytes for kept in self.kept.values()) * max(self.expected, held) > self.budget:
            self.keeping, self.kept = False, {}

    def sample(self, info: VideoInfo, units: list[Span], times: np.ndarray) -> dict[FrameSpec, list[Frames]]:
        out = {}
        for spec, resize in self.resize_of.items():
            wanted = [span_frame_indices(info, unit, spec) for unit in units]
            check_frame_count(spec, wanted)
            kept = self.kept[resize]
            out[spec] = [Frames(np.stack([kept[i] for i in indices]), times[indices], tuple(indices))
                         for indices in wanted]
        return out
