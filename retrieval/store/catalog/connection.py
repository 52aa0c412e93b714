"""The catalog file: one writer at a time, settings, transactions and the snapshot readers open.

Its schema is the numbered ``migrations``: a writer applies the pending ones when it opens the file, a reader of
an older catalog reads an upgraded copy in memory.

Each file's rows and vectors are written in one transaction (``_transaction``), so a run killed at any
point leaves either the whole file or nothing, and every committed change bumps the generation that the
indices derived from the catalog record.
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path
from typing import TypeVar

import duckdb

from retrieval.store.catalog.migrations import LATEST, migrate, pending, upgraded_copy
from retrieval.store.errors import (
    CatalogBusy,
    CatalogDamaged,
    CatalogEmpty,
    DiskFull,
    IndexReadOnly,
    busy_message,
    detail,
    is_damage,
    is_disk_full,
    is_locked,
    is_unwritable,
)
from retrieval.store.snapshots import SNAPSHOT_NAME, WRITER_MARK, published_snapshot, snapshot_is_current, writer_pid

SCHEMA_VERSION = str(LATEST)  # the catalog's schema_version once every migration is applied
LOCK_WAIT_S = 5.0  # a writer waits this long for readers, which hold the catalog only to read a few rows

C = TypeVar("C", bound="Connection")


class Connection:
    """The catalog file open for reading or (one process at a time) writing; the rows' own methods are
    ``Catalog``'s other bases."""

    def __init__(self, path: str | Path, read_only: bool = False):
        self.path = Path(path)
        self.read_only = read_only
        self._snapshot = None if read_only else published_snapshot(self.path)
        # a snapshot already current needs no copy at close unless this writer changes something
        self._dirty = self._snapshot is None or not snapshot_is_current(self.path, self._snapshot)
        try:
            self.db = self._connect()
        except BaseException:
            self._unmark_writer()
            raise
        try:
            self._check()
        except duckdb.Error as exc:
            self.db.close()
            self._unmark_writer()
            if is_damage(exc):
                raise CatalogDamaged(self.path, detail(exc)) from None
            raise
        if read_only and not self._has_schema():
            self.db.close()
            raise CatalogEmpty(f"the catalog {self.path} holds nothing yet")
        self._up_to_date()
        if not read_only:
            self._set_default("generation", "0")
            self._remove_stale_temps()

    upgraded_in_memory = False  # a reader of a catalog an older release wrote reads a migrated copy of it

    def _up_to_date(self) -> None:
        """Apply the pending migrations: a writer to the file, a reader (which may not write) to a copy in memory."""
        try:
            if self.read_only:
                if pending(self.db):
                    self.db = upgraded_copy(self.db, self.path)
                    self.upgraded_in_memory = True
            elif migrate(self.db, self.path.parent):
                self._dirty = True  # the readers' snapshot has the schema of before
        except BaseException as exc:
            self.db.close()
            self._unmark_writer()
            if is_disk_full(exc):
                raise DiskFull("migrating the catalog", self.path) from None
            raise

    def _mark_writer(self) -> None:
        """Say which process writes or waits to: readers cannot ask DuckDB without taking the lock it needs."""
        if self._snapshot is not None and writer_pid(self.path) is None:
            try:
                (self.path.parent / WRITER_MARK).write_text(str(os.getpid()))
            except OSError:
                pass  # readers then say nothing of a run in progress and may delay this writer a little

    def _unmark_writer(self) -> None:
        mark = self.path.parent / WRITER_MARK
        try:
            if self._snapshot is not None and mark.read_text().strip() == str(os.getpid()):
                mark.unlink()
        except (OSError, ValueError):
            pass

    def _remove_stale_temps(self) -> None:
        """Temp files a killed or starved writer left beside the index: only the lock holder may write them."""
        if self._snapshot is None:
            return
        folder = self.path.parent
        partial = [folder / f".{SNAPSHOT_NAME}.tmp", folder / f".{SNAPSHOT_NAME}.tmp.wal"]
        for stale in [*partial, *(folder / "faiss").glob(".*.tmp")]:
            try:
                stale.unlink()
            except OSError:
                pass  # gone already, or `faiss` is a file: the FAISS write says so in one line

    def _connect(self) -> duckdb.DuckDBPyConnection:
        """Open the file; a writer waits a few seconds for readers, which hold it only briefly."""
        deadline = time.monotonic() + (0 if self.read_only else LOCK_WAIT_S)
        if not self.read_only:
            _check_writable(self.path.parent)
            self._mark_writer()  # before the lock is ours: readers turn to the snapshot and let the writer in
        while True:
            try:
                if self.read_only and self.path.name == SNAPSHOT_NAME:
                    return _fresh_reader(self.path)
                return duckdb.connect(str(self.path), read_only=self.read_only)
            except duckdb.Error as exc:
                if is_damage(exc):
                    raise CatalogDamaged(self.path, detail(exc)) from None
                if not self.read_only and is_unwritable(exc):
                    raise IndexReadOnly(self.path.parent, detail(exc)) from None
                if not is_locked(exc):
                    raise
                if time.monotonic() >= deadline:
                    self._unmark_writer()
                    raise CatalogBusy(busy_message(self.path, str(exc))) from None
                time.sleep(0.1)

    def _check(self) -> None:
        """Read the small tables: a damaged file fails here, at open, rather than half-way through a command."""
        if self._has_schema():
            for table in ("settings", "indexers", "files", "units", "embeddings"):
                self.db.execute(f"SELECT count(*) FROM {table}").fetchone()
            self.db.execute("SELECT * FROM settings").fetchall()
            self.db.execute("SELECT * FROM indexers").fetchall()

    def close(self) -> None:
        """Close; a writer that changed anything first publishes its snapshot, so readers never need the file."""
        if self._snapshot is not None and self._dirty:
            try:
                self.snapshot(self._snapshot)
            except (duckdb.Error, OSError):
                pass  # no space for it: readers see the snapshot is stale and read the catalog itself
        try:
            self.db.close()
        except duckdb.Error as exc:  # closing checkpoints the log into the file
            if is_disk_full(exc):
                raise DiskFull("checkpointing the catalog", self.path) from None
            raise
        if self._snapshot is not None and not self._dirty and self._snapshot.is_file():
            # closing checkpoints the log into the catalog file: the snapshot still holds all of it
            os.utime(self._snapshot)
        self._unmark_writer()

    def _has_schema(self) -> bool:
        return bool(self.db.execute(
            "SELECT count(*) FROM information_schema.tables WHERE table_name = 'files'").fetchone()[0])

    def snapshot(self, dest: Path) -> None:
        """Publish the committed state as a file readers can open while this writer holds the lock.

        DuckDB lets no other process open a file a writer holds, even read-only, so the writer
        copies its tables into a second database. The copy goes through DuckDB, never through
        another handle on the catalog file: closing any descriptor of a file drops the process's
        POSIX lock on it, which would let a second writer in.
        """
        tmp = dest.with_name(f".{dest.name}.tmp")
        tmp.unlink(missing_ok=True)
        try:
            self.db.execute(f"ATTACH '{_sql_path(tmp)}' AS snapshot")
            try:
                self.db.execute(f"COPY FROM DATABASE \"{self._name()}\" TO snapshot")
            finally:
                self.db.execute("DETACH snapshot")
            os.replace(tmp, dest)
        except (duckdb.Error, OSError) as exc:
            for partial in (tmp, tmp.with_name(tmp.name + ".wal")):
                partial.unlink(missing_ok=True)
            if is_disk_full(exc):
                raise DiskFull("writing the snapshot", dest) from None
            raise
        if dest == self._snapshot:
            self._dirty = False

    def _name(self) -> str:
        return self.db.execute("SELECT current_database()").fetchone()[0]

    def __enter__(self: C) -> C:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- settings -----------------------------------------------------------
    def _set_default(self, key: str, value: str) -> None:
        self.db.execute("INSERT INTO settings VALUES (?, ?) ON CONFLICT DO NOTHING", [key, value])

    def setting(self, key: str) -> str | None:
        row = self.db.execute("SELECT value FROM settings WHERE key = ?", [key]).fetchone()
        return row[0] if row else None

    def set_setting(self, key: str, value: str) -> None:
        if self.setting(key) == value:
            return  # unchanged: no snapshot to publish for it
        self._dirty = True
        self.db.execute("INSERT OR REPLACE INTO settings VALUES (?, ?)", [key, value])

    @property
    def generation(self) -> int:
        """Bumped by every committed change; derived indices record the generation they saw."""
        return int(self.setting("generation") or 0)

    def _bump(self) -> None:
        self._dirty = True
        self.db.execute(
            "UPDATE settings SET value = CAST(CAST(value AS BIGINT) + 1 AS VARCHAR) WHERE key = 'generation'")

    def _transaction(self, bump: bool = True):
        return _Transaction(self, bump)



def _fresh_reader(path: Path) -> duckdb.DuckDBPyConnection:
    """``path`` opened read-only as it is on disk now.  ``duckdb.connect`` hands out the instance this process
    already has open for a path, and a snapshot is replaced by a rename: a reader connecting while another thread
    still read the old file would read the old snapshot.  An in-memory database that attaches the file opens it
    afresh."""
    db = duckdb.connect()
    try:
        db.execute(f"ATTACH '{_sql_path(path)}' AS snapshot (READ_ONLY)")
        db.execute("USE snapshot")
    except BaseException:
        db.close()
        raise
    return db


def _sql_path(path: Path) -> str:
    return str(path).replace("'", "''")


class _Transaction:
    """BEGIN/COMMIT around a block, ROLLBACK on error; every write bumps the generation (unless it changes no
    vector: ``bump=False``)."""

    def __init__(self, catalog: Connection, bump: bool = True):
        self.catalog, self.bump = catalog, bump

    def __enter__(self):
        self.catalog.db.execute("BEGIN TRANSACTION")
        return self

    def __exit__(self, exc_type, exc_value, _tb):
        try:
            if exc_type is None:
                if self.bump:
                    self.catalog._bump()
                self.catalog.db.execute("COMMIT")
                return False
            self.catalog.db.execute("ROLLBACK")
        except (duckdb.Error, OSError) as exc:
            if exc_type is None:
                _rollback(self.catalog.db)
            if is_disk_full(exc):
                raise DiskFull("committing to the catalog", self.catalog.path) from None
            if is_unwritable(exc):
                raise IndexReadOnly(self.catalog.path.parent, detail(exc)) from None
            raise
        if exc_type is not None and is_disk_full(exc_value):
            raise DiskFull("committing to the catalog", self.catalog.path) from None
        return False


def _check_writable(folder: Path) -> None:
    """IndexReadOnly when ``folder`` refuses a new file: DuckDB opens a read-only folder's catalog for writing
    and fails only at the first commit, after a run has decoded and embedded its first file."""
    try:
        fd, probe = tempfile.mkstemp(dir=folder, prefix=".write-check.")
    except OSError as exc:
        if is_unwritable(exc):
            raise IndexReadOnly(folder, exc.strerror or str(exc)) from None
        return  # a missing folder or a full disk: opening the catalog says so
    os.close(fd)
    os.unlink(probe)


def _rollback(db: duckdb.DuckDBPyConnection) -> None:
    try:
        db.execute("ROLLBACK")
    except duckdb.Error:
        pass  # the failed COMMIT already ended the transaction
