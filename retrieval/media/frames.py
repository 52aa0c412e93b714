"""What decoding a video gives and how it fails: its info, its units (``Span``), their sampled ``Frames``.

The decoders (``retrieval.media.video_decoder.VideoDecoder`` and the backends it tries) build on these types
and errors; so do the callers that only read what was decoded.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, Sequence

import numpy as np

from retrieval.core.errors import ConvisError
from retrieval.core.pixels import DEFAULT_SHORT_SIDE, SizeError, scaled_size
from retrieval.core.sampling import FrameSpec, as_spec

# An every-frame spec (the paper protocol) holds a unit's frames at once; past this many (5 minutes
# at 30 fps, about 1.4 GB of 224-px frames) the unit must be split with --segment instead.
EVERY_FRAME_LIMIT = 9000


class DecodeError(ConvisError):
    """The file could not be decoded as a video; the message is the user-facing reason."""

    exit_code, http_status = 2, 400


class SpanError(DecodeError):
    """A time range with nothing in it: it starts at or past the end of the video (or of the range)."""

    def __init__(self, start: float, stop: float, duration: float):
        super().__init__(f"empty time range {start:g}-{stop:g} s (video is {duration:.1f} s)")
        self.start, self.stop, self.duration = start, stop, duration


class FrameRangeError(SpanError):
    """A range of frame numbers with nothing in it: it starts at or past its stop or the video's last frame."""

    def __init__(self, first: int, stop: int, frame_count: int):
        DecodeError.__init__(self, f"empty frame range [{first}, {stop}) (video has {frame_count} frames)")
        self.start, self.stop, self.duration = first, stop, frame_count


class VideoDamaged(DecodeError):
    """Part of the file's video data could not be decoded: what decodes is found before its units are cut."""


class FileChanged(DecodeError):
    """The file was written while it was being read: what was read is of no one version; a later try may work."""

    transient = True


class BackendUnavailable(ConvisError, ImportError):
    """A decoder is installed but cannot load (torchcodec without its FFmpeg libraries, or with ones it does not
    support)."""

    exit_code, http_status = 1, 500
    label = "internal error"


@dataclass(frozen=True)
class VideoInfo:
    frame_count: int
    fps: float
    duration: float  # seconds
    width: int  # as displayed (after any rotation the container asks for)
    height: int
    decoder: str
    rotation: int = 0  # degrees counter-clockwise the decoded picture must turn (PyAV reports, decord applies)
    # frame ranges [first, stop) of a damaged file that could not be decoded; sampling passes over them
    gaps: tuple[tuple[int, int], ...] = ()
    codec: str = ""  # the video stream's codec ("h264"); "" where the backend does not say


@dataclass(frozen=True)
class Frames:
    """Sampled frames of one unit: (T, H, W, 3) uint8 RGB and their presentation times."""

    pixels: np.ndarray
    timestamps: np.ndarray  # seconds, shape (T,)
    indices: tuple[int, ...]  # frame numbers in the stream


@dataclass(frozen=True)
class Span:
    """A retrievable unit of a video: the whole file, a fixed-length segment or a shot.

    A shot knows its frames exactly (``frames``: first, stop), where a time range is rounded to frames;
    ``boundary`` says what starts it ("cut": a detected cut, with the detector's ``confidence``; "split": a
    long shot split at the longest unit length; "start": the video's start); None for fixed units. ``gaps``:
    frame ranges [first, stop) inside the unit that could not be decoded (a damaged file), which sampling passes
    over.
    """

    segment: int
    start: float
    end: float
    frames: tuple[int, int] | None = None
    boundary: str | None = None
    confidence: float | None = None
    gaps: tuple[tuple[int, int], ...] = ()


def output_size(width: int, height: int, short_side: int = DEFAULT_SHORT_SIDE) -> tuple[int, int]:
    """(width, height) after scaling the short side to ``short_side`` (never upscaling)."""
    try:
        return scaled_size(width, height, short_side)
    except SizeError as exc:
        raise DecodeError(str(exc)) from None


def spans(duration: float, segment_seconds: float | None) -> list[Span]:
    """Units of a video: one for the whole file, or consecutive fixed-length segments.

    A trailing piece shorter than half a segment is merged into the previous one so
    no unit is a sliver.
    """
    if not segment_seconds or duration <= segment_seconds:
        return [Span(0, 0.0, duration)]
    count = max(1, int(duration // segment_seconds))
    if duration - count * segment_seconds >= segment_seconds / 2:
        count += 1
    bounds = [i * segment_seconds for i in range(count)] + [duration]
    return [Span(i, bounds[i], bounds[i + 1]) for i in range(count)]


def span_frame_indices(info: VideoInfo, span: Span, spec: FrameSpec | int) -> list[int]:
    """Frame numbers to decode for one unit: the spec's rule applied to the frames inside the span, less those
    that could not be decoded (the span's and the file's gaps)."""
    first, last = span_frames(info, span)
    gaps = (*span.gaps, *info.gaps)
    if gaps:  # a damaged file: the rule picks among the frames that decode
        kept = decodable(first, last, gaps)
        return [kept[i] for i in as_spec(spec).indices(len(kept), info.fps)]
    return [first + i for i in as_spec(spec).indices(last - first, info.fps)]


def span_frames(info: VideoInfo, span: Span) -> tuple[int, int]:
    """The frames [first, last) a unit covers: its own when it knows them, else its times' frames."""
    if span.frames is not None:  # clamped: another decoder may count a frame or two fewer than the one that cut
        first = min(span.frames[0], info.frame_count - 1)
        return first, max(first + 1, min(info.frame_count, span.frames[1]))
    first = min(info.frame_count - 1, int(math.floor(span.start * info.fps)))
    # a unit that runs to the end has every remaining frame: end * fps undercounts variable-rate clips
    end = info.frame_count if span.end >= info.duration else int(math.ceil(span.end * info.fps))
    return first, min(info.frame_count, max(first + 1, end))


def decodable(first: int, last: int, gaps: Sequence[tuple[int, int]]) -> list[int]:
    """The frame numbers in [first, last) outside every gap."""
    keep = np.ones(max(0, last - first), bool)
    for a, b in gaps:
        keep[max(a, first) - first:max(min(b, last) - first, 0)] = False
    return (np.flatnonzero(keep) + first).tolist()


class Backend(Protocol):
    name: str

    def probe(self, path: Path) -> VideoInfo: ...

    def read(self, path: Path, info: VideoInfo, indices: Sequence[int], resize) -> Frames: ...


def reorder(unique: list[int], pixels: np.ndarray, times: np.ndarray, wanted: Sequence[int]) -> Frames:
    """Expand decoded unique frames back to the requested order (padding repeats frames)."""
    pos = {idx: i for i, idx in enumerate(unique)}
    order = [pos[i] for i in wanted]
    return Frames(np.ascontiguousarray(pixels[order]), times[order], tuple(wanted))


_NOTICES: list[str] = []


def notice(text: str) -> None:
    """Say ``text`` once in this process: logged as a warning (on stderr where logging is not set up) and kept
    for ``decode_notices``."""
    if text not in _NOTICES:
        _NOTICES.append(text)
        logging.getLogger("retrieval.media").warning(text)


def decode_notices() -> list[str]:
    """What decoding has had to say in this process (a GPU fallback, a decoder that cannot load), each once."""
    return list(_NOTICES)


def check_not_empty(path: Path) -> None:
    try:
        empty = path.stat().st_size == 0
    except OSError:
        return  # the decoders say what is wrong with it
    if empty:
        raise DecodeError("empty file (0 bytes)")


def check_frame_count(spec: FrameSpec, wanted: list[list[int]]) -> None:
    longest = max(map(len, wanted), default=0)
    if spec.rule == "every" and longest > EVERY_FRAME_LIMIT:
        raise DecodeError(f"every frame of a unit is wanted and one has {longest} (limit {EVERY_FRAME_LIMIT}); "
                          "split the video with --segment")
