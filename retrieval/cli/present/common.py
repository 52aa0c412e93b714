"""What every verb's output shares: JSON on stdout, notes on stderr, a written page's path, a score's digits, and
the two ways the system can refuse (a damaged catalog, a full disk or a permission)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import NoReturn

from retrieval.api import one_line
from retrieval.cli.console import err, fail, shown


def damaged(exc: Exception) -> NoReturn:
    fail(f"the index's catalog is damaged ({one_line(exc, 160)}); `convis repair` restores its snapshot", 1)


def refused(exc: OSError) -> NoReturn:
    """The system refused: a full disk, a permission, a file where a folder should be."""
    where = f": {exc.filename}" if exc.filename else ""
    fail(f"{exc.strerror or one_line(exc, 200)}{where}", 1)


def print_json(data) -> None:
    sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")


def print_notices(notices) -> None:
    for notice in notices:
        err.print(f"[yellow]note:[/] {shown(notice)}", soft_wrap=True, highlight=False)


def page_written(what: str, page: Path) -> None:
    """``gallery: FILE`` or ``page: FILE`` on stderr, so --json output on stdout stays parseable."""
    err.print(f"{what}: {shown(page)}", highlight=False)


def note(text: str) -> None:
    err.print(f"[yellow]note:[/] {shown(text)}", highlight=False, soft_wrap=True)


def score(value) -> str:
    return "unreadable" if value is None else f"{value:.3f}"
