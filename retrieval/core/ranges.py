"""Whether a number a user typed lies in its range: NaN, infinities and integers too large for a float never do."""

from __future__ import annotations

import math


def in_range(value: float, low: float, high: float, low_open: bool = False) -> bool:
    """``low <= value <= high`` (``low < value`` when ``low_open``), for a finite ``value`` only."""
    try:
        number = float(value)
    except (OverflowError, TypeError, ValueError):
        return False
    if not math.isfinite(number) or number > high:
        return False
    return number > low if low_open else number >= low
