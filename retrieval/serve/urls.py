"""The URLs an answer gives its client to follow: a clip's frame strip, one frame of it, a unit's poster."""

from __future__ import annotations

from urllib.parse import quote, urlencode


def span_params(start: float | None, end: float | None, n: int | None = None, i: int | None = None) -> str:
    params = {"start": f"{start:g}" if start else None, "end": f"{end:g}" if end is not None else None,
              "n": n, "i": i}
    text = urlencode({k: v for k, v in params.items() if v is not None})
    return "?" + text if text else ""


def strip_url(ref: str, start: float | None, end: float | None, n: int = 8) -> str:
    return "/strips/" + quote(ref) + span_params(start, end, n)


def thumb_url(ref: str, start: float | None, end: float | None, n: int, i: int) -> str:
    """Frame ``i`` of the strip of ``n`` frames over the span."""
    return "/thumbs/" + quote(ref) + span_params(start, end, n, i)


def poster_url(ref: str, start: float | None, end: float | None) -> str:
    """A unit's poster: the one frame a strip of one samples, its middle."""
    return thumb_url(ref, start, end, 1, 0)
