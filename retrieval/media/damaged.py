"""What of a damaged video decodes, in frame numbers and in words.

A file whose decode meets packets the decoder refuses (``VideoDamaged``: bytes overwritten, a hole, a file cut
short) is decoded over the frames its units span, passing over those packets as FFmpeg does
(``PyAVBackend.survey``): the frames that came out are its video, the others its gaps, frame ranges [first, stop)
kept on its ``VideoInfo`` and stored with it in words (``describe_gaps``). Its units are cut as an intact
file's are, each sampling among its frames that decode, as if the others were not there, and none kept where
none does (``VideoDecoder.sample``); shots are found among the frames that decode (``shot_units``).
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Sequence

import numpy as np

from retrieval.media.frames import DecodeError, VideoInfo

NOTHING_DECODES = "no frame of the video could be decoded (its video data is damaged)"


def frame_numbers(frame_times: Sequence[float | None], packet_times: Sequence[float | None], origin: float,
                  fps: float) -> list[int]:
    """Each decoded frame's number, its place in presentation order: the place of its time among the packets'
    times when every packet has one (the numbers ``PyAVBackend.read`` seeks by), else its time from the
    stream's start over the nominal rate; a frame without a time follows the one before it."""
    timed = bool(packet_times) and None not in packet_times
    order = np.sort(np.asarray(packet_times, dtype=np.float64)) if timed else None
    numbers, last = [], -1
    for time in frame_times:
        if time is None:
            number = last + 1
        elif order is not None:
            at = int(np.searchsorted(order, time))
            number = at if at < len(order) and (at == 0 or order[at] - time < time - order[at - 1]) else at - 1
        else:
            number = int(round((time - origin) * fps))
        numbers.append(number)
        last = number
    return numbers


def gaps_of(numbers: Sequence[int], frame_count: int) -> tuple[tuple[int, int], ...]:
    """The ranges [first, stop) of 0 .. ``frame_count`` that none of ``numbers`` falls in."""
    present = np.zeros(frame_count, bool)
    present[[n for n in numbers if 0 <= n < frame_count]] = True
    edges = np.flatnonzero(np.diff(np.concatenate([[1], present.astype(np.int8), [1]])))
    return tuple((int(a), int(b)) for a, b in zip(edges[::2], edges[1::2], strict=True))


def surveyed(info: VideoInfo, packet_times: Sequence[float | None], frame_times: Sequence[float | None],
             origin: float) -> VideoInfo:
    """``info`` with the gaps of a decode of the whole file (``packet_times``: every packet's, ``frame_times``:
    those of the frames it gave); its frame count is the frames the file holds (its packets, or the count its
    container lists where it was cut short). Raises DecodeError when no frame decodes."""
    numbers = [n for n in frame_numbers(frame_times, packet_times, origin, info.fps) if n >= 0]
    if not numbers:
        raise DecodeError(NOTHING_DECODES)
    count = max(info.frame_count, len(packet_times), max(numbers) + 1)
    return replace(info, frame_count=count, gaps=gaps_of(numbers, count))


def clipped(gaps: Sequence[tuple[int, int]], first: int, stop: int) -> tuple[tuple[int, int], ...]:
    """The parts of ``gaps`` inside [first, stop)."""
    return tuple((max(a, first), min(b, stop)) for a, b in gaps if a < stop and b > first)


def merged(*gaps: Sequence[tuple[int, int]]) -> tuple[tuple[int, int], ...]:
    """The union of gap lists, as sorted ranges that neither overlap nor touch."""
    out: list[list[int]] = []
    for a, b in sorted(g for each in gaps for g in each):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return tuple((a, b) for a, b in out)


GAPS_SHOWN = 4  # ranges a file's note lists; the count says how many frames are missing in all


def describe_gaps(info: VideoInfo) -> str:
    """A damaged file's gaps in words, for its catalog row ("" when nothing is missing): "86 of 217 frames
    could not be decoded: frames 131-216 (5.24-8.68 s); indexed from the rest"."""
    if not info.gaps:
        return ""
    missing = sum(b - a for a, b in info.gaps)
    return f"{missing} of {info.frame_count} frames could not be decoded: {gap_ranges(info)}; indexed from the rest"


def gap_ranges(info: VideoInfo) -> str:
    """The first ``GAPS_SHOWN`` gaps in frames and seconds: "frames 61-89 (2.28-3.36 s), 120 (4.48-4.52 s)"."""
    shown = ", ".join(f"{a if b - a == 1 else f'{a}-{b - 1}'} ({_seconds(a, info.fps)}-{_seconds(b, info.fps)} s)"
                      for a, b in info.gaps[:GAPS_SHOWN])
    more = len(info.gaps) - GAPS_SHOWN
    if more > 0:
        shown += f" and {more} more range{'s' if more != 1 else ''}"
    return f"frames {shown}"


def _seconds(frame: int, fps: float) -> str:
    return f"{frame / fps:.2f}" if fps > 0 and math.isfinite(fps) else "?"
