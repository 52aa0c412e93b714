"""Times as people type and read them: ``80``, ``80s``, ``1m20s``, ``1:20``, ``00:01:20.5`` in;
``1:20.0`` out (one clock format everywhere convis prints a time)."""

from __future__ import annotations

import re

from retrieval.core.errors import ConvisError

_UNITS = re.compile(r"(?:(\d+(?:\.\d+)?)h)?(?:(\d+(?:\.\d+)?)m)?(?:(\d+(?:\.\d+)?)s?)?")
_CLOCK = re.compile(r"(?:(\d+):)?(\d+):(\d+(?:\.\d+)?)")
EXAMPLES = "80, 80s, 1m20s, 1:20 or 0:01:20"


class TimeFormatError(ConvisError, ValueError):
    """Text that is not a time."""

    exit_code, http_status = 2, 400


def parse_time(text: str) -> float:
    """Seconds from ``80``, ``80.5s``, ``2m``, ``1m20s``, ``1h2m``, ``1:20``, ``00:02`` or ``1:02:03.5``."""
    compact = text.strip().lower().replace(" ", "")
    clock = _CLOCK.fullmatch(compact)
    if clock:
        hours, minutes, seconds = (float(g or 0) for g in clock.groups())
        if minutes >= 60 and clock.group(1) or seconds >= 60:
            raise TimeFormatError(f"not a time: {text!r} (minutes and seconds of a clock time stay below 60)")
        return hours * 3600 + minutes * 60 + seconds
    units = _UNITS.fullmatch(compact)
    if not compact or not units or not any(units.groups()):
        raise TimeFormatError(f"not a time: {text!r} (try {EXAMPLES})")
    hours, minutes, seconds = (float(g or 0) for g in units.groups())
    return hours * 3600 + minutes * 60 + seconds


def format_time(seconds: float) -> str:
    """``8.1`` -> ``0:08.1``, ``80`` -> ``1:20.0``, ``3723.5`` -> ``1:02:03.5`` (to the nearest tenth)."""
    tenths = round(max(seconds, 0.0) * 10)
    whole, tenth = divmod(tenths, 10)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    clock = f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"
    return f"{clock}.{tenth}"


def format_span(start: float, end: float | None) -> str:
    """``0:50.0-1:00.0``; an open end reads ``0:50.0-end``."""
    return f"{format_time(start)}-{'end' if end is None else format_time(end)}"
