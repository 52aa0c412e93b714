"""What can go wrong with a catalog file, told apart from DuckDB's and the OS's errors, in the user's words; and
what an index refuses to be asked."""

from __future__ import annotations

import errno
import os
import re
from pathlib import Path
from typing import Mapping

import duckdb

from retrieval.core.errors import ConvisError
from retrieval.store.snapshots import clock, published_snapshot


class CatalogBusy(ConvisError, RuntimeError):
    """Another process holds the catalog for writing."""

    exit_code, http_status = 2, 503
    retry_after = 5


class CatalogEmpty(ConvisError, RuntimeError):
    """The catalog file exists but a run was stopped before it wrote anything."""

    exit_code, http_status = 2, 503


class CatalogDamaged(ConvisError, RuntimeError):
    """The catalog file cannot be read back: truncated, overwritten or not a DuckDB file at all."""

    exit_code, http_status = 2, 503

    def __init__(self, path: Path, detail: str):
        self.path, self.detail = Path(path), detail
        snapshot = published_snapshot(self.path)
        if snapshot is not None and snapshot.is_file():
            hint = f"`convis repair` restores the snapshot of {clock(snapshot)}"
        else:
            hint = "no snapshot to restore it from: index the folder again into a new --index-dir"
        super().__init__(f"the catalog {self.path} is damaged ({detail}); {hint}")


class IndexSettingsError(ConvisError, ValueError):
    """The run asks for what the index refuses: settings that contradict how it was built, another folder,
    or forgetting most of its files."""

    exit_code, http_status = 2, 400


class DiskFull(ConvisError, OSError):
    """No space left on the index's device; what was committed before stays whole."""

    exit_code, http_status = 1, 507

    def __init__(self, doing: str, filename: str | Path | None = None):
        super().__init__(errno.ENOSPC, f"no space left on device while {doing}; the index is intact as of its "
                                       "last committed file", None if filename is None else str(filename))

    def public(self, remedies: Mapping[str, str] | None = None) -> str:
        """What the system refused and where, as for any refusal of the system (without OSError's errno)."""
        return f"{self.strerror}: {self.filename}" if self.filename else str(self.strerror)


class IndexReadOnly(ConvisError, RuntimeError):
    """The index folder or its catalog cannot be written (its permissions, a read-only mount): a run that would
    change it stops before anything is done, while commands that only read it go on working."""

    exit_code, http_status = 1, 403

    def __init__(self, folder: Path, detail: str):
        self.folder = Path(folder)
        super().__init__(f"cannot write the index {self.folder} ({detail}); commands that only read it (query, "
                         "search, ls, info, serve) still work: make it writable, or index into another --index-dir")


# DuckDB's words for a file or folder the process may not write
_UNWRITABLE = ("permission denied", "read-only file system")


def is_unwritable(exc: BaseException) -> bool:
    """DuckDB or the OS refusing a write for want of permission (a read-only folder or mount)."""
    if isinstance(exc, OSError):
        return exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS)
    return isinstance(exc, duckdb.Error) and any(w in str(exc).lower() for w in _UNWRITABLE)


# DuckDB's words for a file that is not (or no longer) a whole database
_DAMAGE = ("not a valid duckdb database", "corrupt database", "could not read enough bytes", "checksum",
           "invalid block", "serialization error", "failed to deserialize")


def is_damage(exc: BaseException) -> bool:
    text = str(exc).lower()
    return isinstance(exc, duckdb.Error) and not is_locked(exc) and any(w in text for w in _DAMAGE)


def is_locked(exc: BaseException) -> bool:
    """DuckDB's refusal because another process holds the file (not a "block" of a damaged one), or because this
    process has it open the other way (a server reading it while it removes a file, or the other way round)."""
    return re.search(r"\b(could not set lock|conflicting lock|with a different configuration than existing "
                     r"connections)\b", str(exc).lower()) is not None


def is_disk_full(exc: BaseException) -> bool:
    return getattr(exc, "errno", None) == errno.ENOSPC or "no space left on device" in str(exc).lower()


def busy_message(path: Path, error: str) -> str:
    """Who holds the catalog, from the PID DuckDB's lock error names: a server reading it or an index run."""
    found = re.search(r"PID (\d+)", error)
    pid = int(found.group(1)) if found else None
    holder = _command_of(pid) if pid is not None else None
    if holder is None:
        return f"the catalog {path} is held by another process{f' (pid {pid})' if pid else ''}; retry when it finishes"
    if " index" in f" {holder}" and "convis" in holder:
        return f"the catalog {path} is being written by another `convis index` run (pid {pid}); retry when it finishes"
    return f"the catalog {path} is held by `{holder}` (pid {pid}); retry when it finishes or stop it"


def _command_of(pid: int) -> str | None:
    """The command line of ``pid`` as typed (``convis serve ...``), None when it cannot be read."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return None
    words = [os.path.basename(w.decode(errors="replace")) if i == 0 else w.decode(errors="replace")
             for i, w in enumerate(argv) if w]
    # `python cli.py serve` and `.../bin/convis serve` alike read as `convis serve`
    start = next((i for i, w in enumerate(words) if os.path.basename(w) in ("convis", "cli.py")), None)
    if start is not None:
        words = ["convis", *words[start + 1:]]
    return " ".join(words[:4]) or None


def detail(exc: BaseException) -> str:
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return re.sub(r"^[A-Za-z ]*Error: ", "", text)[:160]
