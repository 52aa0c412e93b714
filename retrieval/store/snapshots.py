"""The snapshot a writer publishes beside its catalog, and the mark that says a writer is at work.

DuckDB lets no other process open a database file while a writer holds it, and a reader holding it keeps the
writer out; so readers read a copy of the committed state (``snapshot.duckdb``) whenever it is current, and a
writer leaves its pid where readers look before they touch the catalog.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from retrieval.core.processes import pid_alive, pid_user

CATALOG_NAME = "catalog.duckdb"
SNAPSHOT_NAME = "snapshot.duckdb"  # the committed state a writer publishes beside its catalog for readers
WRITER_MARK = ".writer.pid"  # the pid of the process holding the catalog for writing, while it does


def published_snapshot(catalog_path: Path) -> Path | None:
    """Where the writer of ``catalog_path`` publishes its snapshot (None for a catalog not named as an index's)."""
    catalog_path = Path(catalog_path)
    return catalog_path.with_name(SNAPSHOT_NAME) if catalog_path.name == CATALOG_NAME else None


def writer_pid(catalog_path: Path) -> int | None:
    """The live process (other than this one) writing ``catalog_path``, if any; a killed writer's mark is ignored,
    and so is one whose number another user's process took since (the mark belongs to the user who wrote it)."""
    mark = Path(catalog_path).parent / WRITER_MARK
    try:
        pid = int(mark.read_text().strip())
        if pid == os.getpid() or not pid_alive(pid) or pid_user(pid) not in (None, mark.stat().st_uid):
            return None
    except (OSError, ValueError):
        return None
    return pid


def snapshot_is_current(catalog_path: Path, snapshot: Path) -> bool:
    """The snapshot holds everything committed: written no earlier than the catalog and its write-ahead log.

    The writer re-stamps the snapshot after it closes the catalog (closing checkpoints the log into the file),
    so an up-to-date snapshot is never older than either.
    """
    try:
        published = snapshot.stat().st_mtime_ns
        changed = max(_mtime_ns(catalog_path), _mtime_ns(catalog_path.with_name(catalog_path.name + ".wal")))
    except OSError:
        return False
    return published >= changed


def _mtime_ns(path: Path) -> int:
    try:
        return path.stat().st_mtime_ns
    except FileNotFoundError:
        return 0


def clock(path: Path) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(path.stat().st_mtime))
