"""Which frames to decode: the ConViS reference's sampling, as pure index arithmetic."""

from __future__ import annotations

import math


def uniform_indices(n: int, wanted: int) -> list[int]:
    """Pick ``wanted`` of ``n`` items as the ConViS reference does.

    ``gap = n / wanted``; item ``i`` is ``int(i * gap + gap / 2)``.  When there are
    fewer items than wanted, every item is taken and the last one repeated (padding).
    """
    if wanted <= 0:
        raise ValueError("wanted must be positive")
    if n <= 0:
        return []
    if n < wanted:
        return list(range(n)) + [n - 1] * (wanted - n)
    gap = n / wanted
    return [int(i * gap + gap / 2) for i in range(wanted)]


def per_second_indices(frame_count: int, fps: float) -> list[int]:
    """About one frame a second: every round(fps)-th frame, as the reference's first pass."""
    step = max(1, int(round(fps))) if fps and math.isfinite(fps) and fps > 0 else 1
    return list(range(0, max(frame_count, 0), step))


def sample_frame_indices(frame_count: int, fps: float, wanted: int) -> list[int]:
    """Frame numbers to decode for one unit: 1 fps, then uniformly down (or padded) to ``wanted``."""
    seconds = per_second_indices(frame_count, fps)
    return [seconds[i] for i in uniform_indices(len(seconds), wanted)]
