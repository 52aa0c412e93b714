"""Failures as the one line a user reads: CLI errors, skipped-file reasons, notices."""

from __future__ import annotations


def one_line(exc: BaseException, limit: int | None = 200) -> str:
    """``exc``'s message with its whitespace folded to single spaces, cut at ``limit`` characters;
    the exception's type name when it has no message (``KeyError()`` would otherwise say nothing)."""
    text = " ".join(str(exc).split())
    if limit is not None:
        text = text[:limit]
    return text or type(exc).__name__
