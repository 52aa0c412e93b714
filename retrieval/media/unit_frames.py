"""Which frames of a stored unit a model saw when it was indexed, without decoding it again.

Indexing samples a unit as ``VideoDecoder.sample`` does: the unit's span becomes frame numbers
(``span_frame_indices``) and the model's ``FrameSpec`` picks among them. The same arithmetic over the
file's probed frame count and rate gives the same frame numbers now; a frame's time is its number over
the rate, counted from the first frame, as the decoders report a constant-rate file's times.
"""

from __future__ import annotations

import math

from retrieval.core.sampling import FrameSpec
from retrieval.media.frames import Span, VideoInfo, span_frame_indices


def stored_span(segment: int, start: float, end: float, boundary: str | None, fps: float) -> Span:
    """The span a stored unit was sampled over: a shot unit (it has a ``boundary``) by its frames, rounded from
    its times as indexing does when it samples stored shots again; a fixed unit by its times."""
    if boundary is not None and fps > 0:
        return Span(segment, start, end, (round(start * fps), round(end * fps)), boundary)
    return Span(segment, start, end)


def unit_frames(info: VideoInfo, span: Span, spec: FrameSpec) -> list[tuple[int, float]]:
    """(frame number, seconds) of each frame ``spec`` took from ``span``, in the order the model saw them
    (padding repeats the last frame, as the model saw it)."""
    return [(index, frame_time(info, index)) for index in span_frame_indices(info, span, spec)]


def frame_time(info: VideoInfo, index: int) -> float:
    return index / info.fps if info.fps > 0 else 0.0


def nearest_frame(info: VideoInfo, seconds: float) -> int | None:
    """The frame nearest ``seconds`` (a time rounded to the millisecond still finds its frame); None past the
    end."""
    if not math.isfinite(seconds) or seconds < 0 or seconds > info.duration or info.frame_count <= 0:
        return None
    return min(info.frame_count - 1, int(round(seconds * info.fps)))


def describe_sampling(spec: FrameSpec, frames: list[tuple[int, float]]) -> str:
    """What a model sees of a unit, in a few words: "8 frames, 1 a second", "every frame (250 frames)"."""
    distinct = sorted({(index, time) for index, time in frames})
    count = f"{len(distinct)} frame{'s' if len(distinct) != 1 else ''}"
    if spec.rule == "every":
        return f"every frame ({count})"
    said = f"{count}, {_pace(distinct)}" if len(distinct) > 1 else count
    if spec.rule in ("linspace", "linspace-pad", "midpoints"):
        said += ", spread evenly over the unit"
    if len(distinct) < len(frames):  # the model was fed the last one again to fill its clip
        said += f" (the last repeated to {len(frames)})"
    return said


def _pace(frames: list[tuple[int, float]]) -> str:
    """How often the frames come, from the first to the last: "1 a second", "1 every 2.5 s", "4 a second"."""
    gap = (frames[-1][1] - frames[0][1]) / (len(frames) - 1)
    if gap <= 0:
        return "at one moment"
    if abs(gap - 1) < 0.05:
        return "1 a second"
    return f"1 every {gap:.2g} s" if gap > 1 else f"{1 / gap:.2g} a second"
