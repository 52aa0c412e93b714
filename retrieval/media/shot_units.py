"""Shot units of one file: find its shots and sample each unit's frames, in one decode where memory allows.

Shot detection must see every frame, so it decodes the whole file (PyAV, threaded, in order). While it
does, each frame is also converted to the size every frame spec wants and kept, when the whole file's
kept frames fit ``ONE_PASS_BYTES`` (estimated from the first frame and the frame count): the units'
frames are then picked from memory, and the file is decoded once. A longer file keeps nothing and
its units are sampled afterwards by ``VideoDecoder`` (seeking, as for fixed units): two decodes, with
memory bounded by the sampling window instead of the file's length.

A damaged file's packets that do not decode are passed over (``decoded_frames``): the detector sees the frames
that decode, one after the other, and the units found among them are placed at those frames' numbers in the
file, with the gaps inside each (``retrieval.media.damaged``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Iterator, Sequence

import numpy as np

from retrieval.core.defaults import MiB
from retrieval.core.errors import one_line
from retrieval.core.pixels import DEFAULT_SHORT_SIDE, DecoderScaled
from retrieval.core.sampling import FrameSpec
from retrieval.core.segmentation import ShotRule
from retrieval.media.damaged import NOTHING_DECODES, clipped, frame_numbers, surveyed
from retrieval.media.frames import (
    DecodeError,
    Frames,
    Span,
    VideoInfo,
    check_frame_count,
    check_not_empty,
    span_frame_indices,
)
from retrieval.media.pyav_backend import Damage, PyAVBackend, decoded_frames, frame_converter, open_video
from retrieval.media.shots import Shot, get_detector, shots_from_cuts
from retrieval.media.video_decoder import plain_reason

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
    seen = _Seen()
    try:
        info = PyAVBackend().probe(path)
        keep = _Keeper(info, specs, short_side, ONE_PASS_BYTES if budget is None else budget)
        cuts = detector.detect(_small_frames(path, info, detector, keep, seen, threads), info.fps)
    except DecodeError:
        raise
    except Exception as exc:  # PyAV and the detectors raise many types; each is this file's failure
        known = plain_reason([("pyav", one_line(exc, 300))])  # not a video, not a whole one: said as a decode says
        failed = DecodeError(known if known != one_line(exc, 300) else f"shot detection failed: {known}")
        # out of memory (the CPU's, or a GPU's for TransNetV2) may pass: a later run tries the file again
        failed.transient = isinstance(exc, MemoryError) or "out of memory" in str(exc).lower()
        raise failed from None
    if not seen.times:
        raise DecodeError(NOTHING_DECODES if seen.damaged else "no frame could be decoded")
    units = shot_spans(shots_from_cuts(cuts, len(seen.times), info.fps, rule.min_seconds, rule.max_seconds))
    numbers = None
    if seen.damaged:  # the shots of the frames that decode, at those frames' numbers
        info = surveyed(info, seen.damage.packet_times, seen.raw, seen.origin)
        numbers = frame_numbers(seen.raw, seen.damage.packet_times, seen.origin, info.fps)
        units = [_placed(unit, numbers, info) for unit in units]
    else:
        info = replace(info, frame_count=len(seen.times))
    frames = keep.sample(info, units, np.asarray(seen.times), numbers) if keep.keeping else None
    return ShotCut(info, units, frames, detector.name, time.perf_counter() - began)


@dataclass
class _Seen:
    """What the detection pass decoded: each frame's time from the stream's first (``times``) and as the
    stream states it (``raw``, None where it has none), the stream's start and the damage met."""

    times: list[float] = field(default_factory=list)
    raw: list[float | None] = field(default_factory=list)
    origin: float = 0.0
    damage: Damage = field(default_factory=Damage)
    listed: int = 0  # the frames the container lists (0: it does not say)

    @property
    def damaged(self) -> bool:
        """Packets did not decode, or the file ends before the frames its container lists."""
        return bool(self.damage.packets) or len(self.damage.packet_times) < self.listed


def _placed(unit: Span, numbers: Sequence[int], info: VideoInfo) -> Span:
    """A shot unit of the decoded frames (``unit.frames``: their places in the decode) at the numbers of those
    frames in the file, with the gaps inside it."""
    a, b = unit.frames
    first, stop = min(numbers[a:b]), max(numbers[a:b]) + 1
    return replace(unit, start=first / info.fps, end=stop / info.fps, frames=(first, stop),
                   gaps=clipped(info.gaps, first, stop))


def _small_frames(path: Path, info: VideoInfo, detector, keep: "_Keeper", seen: _Seen,
                  threads: int | None) -> Iterator[np.ndarray]:
    """Every frame at the detector's size, in order; each is offered to ``keep`` first and its time noted."""
    width, height = detector.frame_size(info.width, info.height)
    if info.rotation in (90, 270):
        width, height = height, width  # scaled in the coded orientation: the detector needs no upright picture
    with open_video(path) as container:
        stream = container.streams.video[0]
        stream.thread_type = "AUTO"
        if threads:
            stream.codec_context.thread_count = threads
        origin = float(stream.start_time * stream.time_base) if stream.start_time and stream.time_base else 0.0
        seen.origin, seen.listed = origin, int(stream.frames or 0)
        for frame in decoded_frames(container, stream, seen.damage):
            keep.offer(frame)
            seen.times.append(frame.time - origin if frame.time is not None else len(seen.times) / info.fps)
            seen.raw.append(frame.time)
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

    def sample(self, info: VideoInfo, units: list[Span], times: np.ndarray,
               numbers: Sequence[int] | None = None) -> dict[FrameSpec, list[Frames]]:
        """Each spec's frames of each unit; ``numbers``: the file's number of each frame kept, where they are not
        their places in the decode (a damaged file's)."""
        place = None if numbers is None else {number: i for i, number in enumerate(numbers)}
        out = {}
        for spec, resize in self.resize_of.items():
            wanted = [span_frame_indices(info, unit, spec) for unit in units]
            check_frame_count(spec, wanted)
            kept = self.kept[resize]
            at = [indices if place is None else [place[i] for i in indices] for indices in wanted]
            out[spec] = [Frames(np.stack([kept[i] for i in where]), times[where], tuple(indices))
                         for indices, where in zip(wanted, at, strict=True)]
        return out
