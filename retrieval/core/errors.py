"""Failures as the one line a user reads: the one exception base, CLI errors, skipped-file reasons, notices."""

from __future__ import annotations

from typing import Mapping


class ConvisError(Exception):
    """Every exception convis raises derives from this one class, which says what the failure means to each face:
    ``exit_code`` for the CLI (2: the input or the index needs the user's fix; 1: the system or a model failed)
    and ``http_status`` for the server (4xx: the request; 5xx: the server's side). Subclasses set both; the CLI
    and the server each turn any ConvisError into one line through one handler, so no face keeps a list."""

    exit_code: int = 2
    http_status: int = 400
    retry_after: int | None = None  # seconds after which asking again may work (a server sends it with its 503)
    label: str | None = None  # the server's words before the line, where the line alone would not say what failed

    def public(self, remedies: Mapping[str, str] | None = None) -> str:
        """The one line a face shows (a subclass may word it for its reader). ``remedies``: the face's own words
        for what a line may tell its reader to do, by name (the server's way to ask for free text is not the
        CLI's flag); a line without a remedy ignores them."""
        return one_line(self, None)


def one_line(exc: BaseException, limit: int | None = 200) -> str:
    """``exc``'s message with its whitespace folded to single spaces, cut at ``limit`` characters;
    the exception's type name when it has no message (``KeyError()`` would otherwise say nothing)."""
    text = " ".join(str(exc).split())
    if limit is not None:
        text = text[:limit]
    return text or type(exc).__name__


def some(names: list[str], shown: int = 5) -> str:
    """The first ``shown`` of ``names`` and how many more: a line naming a million paths is no line at all."""
    more = f" and {len(names) - shown:,} more" if len(names) > shown else ""
    return ", ".join(names[:shown]) + more
