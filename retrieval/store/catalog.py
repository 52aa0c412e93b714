"""The DuckDB catalog: the source of truth for files, units and their vectors.

Everything else (FAISS indices, reports) is derived from it.  Each file's rows and
vectors are written in one transaction, so a run killed at any point leaves either
the whole file or nothing, and the next run resumes from there.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

import duckdb
import numpy as np

from rerankers.prompts.describe import CAPTION as CAPTION_KEY
from retrieval.store.errors import (
    CatalogBusy,
    CatalogDamaged,
    CatalogEmpty,
    DiskFull,
    busy_message,
    detail,
    is_damage,
    is_disk_full,
    is_locked,
)
from retrieval.store.snapshots import SNAPSHOT_NAME, WRITER_MARK, published_snapshot, snapshot_is_current, writer_pid

SCHEMA_VERSION = "1"
LOCK_WAIT_S = 5.0  # a writer waits this long for readers, which hold the catalog only to read a few rows

SCHEMA = """
CREATE SEQUENCE IF NOT EXISTS file_ids START 1;
CREATE SEQUENCE IF NOT EXISTS unit_ids START 1;
CREATE TABLE IF NOT EXISTS settings (key VARCHAR PRIMARY KEY, value VARCHAR);
CREATE TABLE IF NOT EXISTS files (
    file_id BIGINT PRIMARY KEY, path VARCHAR UNIQUE NOT NULL, size BIGINT, mtime DOUBLE,
    content_hash VARCHAR, duration DOUBLE, fps DOUBLE, width INTEGER, height INTEGER,
    frame_count INTEGER, decoder VARCHAR, status VARCHAR NOT NULL, error VARCHAR,
    indexed_at TIMESTAMP DEFAULT current_timestamp, transient BOOLEAN DEFAULT false);
ALTER TABLE files ADD COLUMN IF NOT EXISTS transient BOOLEAN DEFAULT false;
CREATE TABLE IF NOT EXISTS units (
    unit_id BIGINT PRIMARY KEY, file_id BIGINT NOT NULL, segment INTEGER,
    start_s DOUBLE, end_s DOUBLE, frame_times DOUBLE[]);
CREATE TABLE IF NOT EXISTS embeddings (
    unit_id BIGINT NOT NULL, indexer VARCHAR NOT NULL, vector BLOB NOT NULL,
    PRIMARY KEY (unit_id, indexer));
CREATE TABLE IF NOT EXISTS indexers (
    indexer VARCHAR PRIMARY KEY, name VARCHAR, source VARCHAR, kind VARCHAR, dim INTEGER,
    frames INTEGER, faiss_factory VARCHAR);
CREATE TABLE IF NOT EXISTS descriptions (
    content_hash VARCHAR NOT NULL, start_s DOUBLE NOT NULL, end_s DOUBLE NOT NULL, concept VARCHAR NOT NULL,
    model VARCHAR NOT NULL, revision VARCHAR NOT NULL, prompt_version VARCHAR NOT NULL, text VARCHAR,
    status VARCHAR NOT NULL, error VARCHAR, created_at TIMESTAMP DEFAULT current_timestamp,
    PRIMARY KEY (content_hash, start_s, end_s, concept, model, revision, prompt_version));
ALTER TABLE embeddings ADD COLUMN IF NOT EXISTS source VARCHAR;
ALTER TABLE units ADD COLUMN IF NOT EXISTS boundary VARCHAR;
ALTER TABLE units ADD COLUMN IF NOT EXISTS confidence DOUBLE;
ALTER TABLE files ADD COLUMN IF NOT EXISTS units_by VARCHAR;
CREATE TABLE IF NOT EXISTS description_signals (
    signal VARCHAR PRIMARY KEY, indexer VARCHAR NOT NULL, concept VARCHAR NOT NULL, dim INTEGER,
    faiss_factory VARCHAR);
CREATE TABLE IF NOT EXISTS excluded (path VARCHAR PRIMARY KEY, excluded_at TIMESTAMP DEFAULT current_timestamp);
"""


@dataclass(frozen=True)
class FileState:
    file_id: int
    size: int
    mtime: float
    content_hash: str | None
    status: str
    error: str | None = None  # why it failed (status "failed")
    transient: bool = False  # it failed for a passing reason (timeout, crash, full disk): a later run retries it


@dataclass(frozen=True)
class FileRecord:
    path: str  # relative to the index root, POSIX separators
    size: int
    mtime: float
    content_hash: str
    duration: float
    fps: float
    width: int
    height: int
    frame_count: int
    decoder: str
    units_by: str = ""  # how its units were cut (``retrieval.core.segmentation`` label); "" when not recorded


@dataclass(frozen=True)
class UnitRecord:
    segment: int
    start: float
    end: float
    frame_times: tuple[float, ...]
    boundary: str | None = None  # shot units: "start", "cut" or "split"; None: fixed units
    confidence: float | None = None  # of the detected cut that starts the unit


@dataclass(frozen=True, kw_only=True)
class UnitRow(UnitRecord):
    """A stored unit as recall reads it back: the record, with its id and its file."""

    unit_id: int
    path: str
    content_hash: str | None


@dataclass(frozen=True)
class IndexerRow:
    indexer: str
    name: str
    source: str
    kind: str
    dim: int
    frames: int
    faiss_factory: str | None


@dataclass(frozen=True)
class DescriptionSignal:
    """A text indexer's vectors of one concept's descriptions: a signal of its own, with its own FAISS index."""

    signal: str  # "<text indexer model id>#<concept key>"
    indexer: str  # the text indexer's model id
    concept: str
    dim: int
    faiss_factory: str | None = None


@dataclass(frozen=True)
class DescriberKey:
    """Which model wrote a description, and how it was asked: with the unit, the description's cache key."""

    model: str  # the model's stable id, e.g. "llava-onevision:llava-hf/..."
    revision: str  # its weights: hub commit or a hash of the local folder
    prompt_version: str  # the requests and the frames it saw


@dataclass(frozen=True)
class Description:
    """One stored answer: a unit's caption (concept "caption") or its description of one concept.

    Units are named by their bytes and span, not their file, so the same bytes under another
    name, or a re-index, find it again. ``status`` "ok", or "unreadable" with the reason in ``error``.
    """

    content_hash: str
    start: float
    end: float
    concept: str
    key: DescriberKey
    text: str | None
    status: str = "ok"
    error: str | None = None


# descriptions read from ``<stem>.txt`` / ``<stem>.<concept>.txt`` files: written by a person or another tool
FILE_KEY = DescriberKey("file", "", "file")


def span_key(seconds: float) -> float:
    # spans are keyed to the millisecond: the same unit read again never misses its rows by a rounding
    return round(float(seconds), 3)


class Catalog:
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
        if not read_only:
            self.db.execute(SCHEMA)
            self._set_default("schema_version", SCHEMA_VERSION)
            self._set_default("generation", "0")
            self._remove_stale_temps()

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
            self._mark_writer()  # before the lock is ours: readers turn to the snapshot and let the writer in
        while True:
            try:
                return duckdb.connect(str(self.path), read_only=self.read_only)
            except duckdb.Error as exc:
                if is_damage(exc):
                    raise CatalogDamaged(self.path, detail(exc)) from None
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

    def __enter__(self) -> "Catalog":
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

    # -- indexers -----------------------------------------------------------
    def register_indexer(self, row: IndexerRow) -> None:
        self._dirty = True
        self.db.execute(
            "INSERT INTO indexers VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (indexer) DO UPDATE SET "
            "dim = excluded.dim, frames = excluded.frames",
            [row.indexer, row.name, row.source, row.kind, row.dim, row.frames, row.faiss_factory],
        )

    def set_faiss_factory(self, indexer: str, factory: str) -> None:
        self._dirty = True
        self.db.execute("UPDATE indexers SET faiss_factory = ? WHERE indexer = ?", [factory, indexer])
        self.db.execute("UPDATE description_signals SET faiss_factory = ? WHERE signal = ?", [factory, indexer])

    def indexers(self) -> list[IndexerRow]:
        rows = self.db.execute("SELECT * FROM indexers ORDER BY indexer").fetchall()
        return [IndexerRow(*r) for r in rows]

    def register_description_signal(self, row: DescriptionSignal) -> None:
        self._dirty = True
        self.db.execute(
            "INSERT INTO description_signals VALUES (?, ?, ?, ?, ?) ON CONFLICT (signal) DO UPDATE SET "
            "dim = excluded.dim", [row.signal, row.indexer, row.concept, row.dim, row.faiss_factory])

    def description_signals(self) -> list[DescriptionSignal]:
        """Every concept's description signal (none in a catalog written before they existed)."""
        if not self._has_table("description_signals"):
            return []
        rows = self.db.execute("SELECT * FROM description_signals ORDER BY signal").fetchall()
        return [DescriptionSignal(*r) for r in rows]

    # -- files --------------------------------------------------------------
    def file_states(self) -> dict[str, FileState]:
        rows = self.db.execute("SELECT path, file_id, size, mtime, content_hash, status, error, "
                               "coalesce(transient, false) FROM files").fetchall()
        return {r[0]: FileState(*r[1:]) for r in rows}

    def indexed_with(self, indexer: str) -> set[str]:
        """Paths whose every unit has a vector from ``indexer``."""
        rows = self.db.execute(
            """SELECT f.path FROM files f JOIN units u USING (file_id)
               LEFT JOIN embeddings e ON e.unit_id = u.unit_id AND e.indexer = ?
               WHERE f.status = 'ok' GROUP BY f.path HAVING count(e.unit_id) = count(*)""",
            [indexer],
        ).fetchall()
        return {r[0] for r in rows}

    def unit_spans(self) -> dict[str, tuple[float, list[tuple[float, float]], str]]:
        """Every indexed file's duration, its units' (start, end) seconds in segment order, and how they were cut
        (the label it was indexed with, "" when not recorded)."""
        rows = self.db.execute(
            """SELECT f.path, any_value(f.duration), list(u.start_s ORDER BY u.segment),
                      list(u.end_s ORDER BY u.segment), any_value(coalesce(f.units_by, ''))
               FROM files f JOIN units u USING (file_id) WHERE f.status = 'ok' GROUP BY f.path""").fetchall()
        return {path: (duration, list(zip(starts, ends)), by) for path, duration, starts, ends, by in rows}

    def commit_file(self, record: FileRecord, units: Sequence[UnitRecord],
                    vectors: dict[str, np.ndarray]) -> None:
        """Replace one file's rows and vectors atomically. ``vectors[indexer]`` is (len(units), dim)."""
        with self._transaction():
            self._delete_paths([record.path])
            file_id = self._insert_file(record, "ok", None)
            for i, unit in enumerate(units):
                unit_id = self.db.execute("SELECT nextval('unit_ids')").fetchone()[0]
                self.db.execute(
                    "INSERT INTO units (unit_id, file_id, segment, start_s, end_s, frame_times, boundary, confidence) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    [unit_id, file_id, unit.segment, unit.start, unit.end, list(unit.frame_times), unit.boundary,
                     unit.confidence],
                )
                for indexer, matrix in vectors.items():
                    vec = np.ascontiguousarray(matrix[i], dtype=np.float32).tobytes()
                    self.db.execute("INSERT INTO embeddings (unit_id, indexer, vector) VALUES (?, ?, ?)",
                                    [unit_id, indexer, vec])

    def add_vectors(self, path: str, vectors: dict[str, np.ndarray]) -> None:
        """Add another indexer's vectors to an already indexed file (same units, same order)."""
        with self._transaction():
            unit_ids = [r[0] for r in self.db.execute(
                "SELECT unit_id FROM units JOIN files USING (file_id) WHERE path = ? ORDER BY segment", [path]
            ).fetchall()]
            for indexer, matrix in vectors.items():
                self.db.execute(
                    "DELETE FROM embeddings WHERE indexer = ? AND unit_id IN (SELECT unnest(?::BIGINT[]))",
                    [indexer, unit_ids],
                )
                for unit_id, row in zip(unit_ids, matrix):
                    vec = np.ascontiguousarray(row, dtype=np.float32).tobytes()
                    self.db.execute("INSERT INTO embeddings (unit_id, indexer, vector) VALUES (?, ?, ?)",
                                    [unit_id, indexer, vec])

    def record_failure(self, path: str, size: int, mtime: float, error: str, transient: bool = False) -> None:
        """``transient``: the cause may pass (a timeout, a crash, a full disk), so a later run tries the file again."""
        with self._transaction():
            self._delete_paths([path])
            self._insert_file(FileRecord(path, size, mtime, "", 0, 0, 0, 0, 0, ""), "failed", error, transient)

    def touch(self, path: str, size: int, mtime: float) -> None:
        """A file whose bytes did not change but whose mtime did: keep its vectors."""
        self._dirty = True
        self.db.execute("UPDATE files SET size = ?, mtime = ? WHERE path = ?", [size, mtime, path])

    def forget(self, paths: Iterable[str]) -> int:
        paths = list(paths)
        if not paths:
            return 0
        with self._transaction():
            self._delete_paths(paths)
        return len(paths)

    # -- files taken out of the index: their rows go, and later runs skip them while they stay in the folder
    def exclude(self, paths: Iterable[str]) -> int:
        """Forget ``paths`` (rows and vectors) and record them excluded, in one transaction; how many were not
        excluded before."""
        paths = sorted(set(paths))
        if not paths:
            return 0
        before = set(self.excluded())
        with self._transaction():
            self._delete_paths(paths)
            # not ON CONFLICT: DuckDB names an upsert's incoming row "excluded" too, and refuses the clash
            self.db.execute("INSERT INTO excluded (path) SELECT p FROM unnest(?::VARCHAR[]) t(p) "
                            "WHERE p NOT IN (SELECT path FROM excluded)", [paths])
        return len(set(paths) - before)

    def include(self, paths: Iterable[str]) -> int:
        """Let later runs index ``paths`` again; how many were excluded."""
        wanted = set(paths) & set(self.excluded())
        if not wanted:
            return 0
        with self._transaction(bump=False):  # no vector changes until a run indexes them
            self._dirty = True
            self.db.execute("DELETE FROM excluded WHERE path IN (SELECT unnest(?::VARCHAR[]))", [sorted(wanted)])
        return len(wanted)

    def excluded(self) -> list[str]:
        """The paths runs skip, sorted (none in a catalog written before files could be excluded)."""
        if not self._has_table("excluded"):
            return []
        return [r[0] for r in self.db.execute("SELECT path FROM excluded ORDER BY path").fetchall()]

    def _insert_file(self, r: FileRecord, status: str, error: str | None, transient: bool = False) -> int:
        file_id = self.db.execute("SELECT nextval('file_ids')").fetchone()[0]
        self.db.execute(
            "INSERT INTO files (file_id, path, size, mtime, content_hash, duration, fps, width, height, frame_count, "
            "decoder, status, error, transient, units_by) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [file_id, r.path, r.size, r.mtime, r.content_hash or None, r.duration, r.fps, r.width,
             r.height, r.frame_count, r.decoder or None, status, error, transient, r.units_by or None],
        )
        return file_id

    def _delete_paths(self, paths: list[str]) -> None:
        ids = "SELECT file_id FROM files WHERE path IN (SELECT unnest(?::VARCHAR[]))"
        units = f"SELECT unit_id FROM units WHERE file_id IN ({ids})"
        self.db.execute(f"DELETE FROM embeddings WHERE unit_id IN ({units})", [paths])
        self.db.execute(f"DELETE FROM units WHERE file_id IN ({ids})", [paths])
        self.db.execute("DELETE FROM files WHERE path IN (SELECT unnest(?::VARCHAR[]))", [paths])

    def _transaction(self, bump: bool = True):
        return _Transaction(self, bump)

    # -- descriptions (index-time captions) ---------------------------------
    def write_descriptions(self, rows: Sequence[Description]) -> None:
        """Store one unit's answers in one transaction (replacing any under the same key).

        No generation bump: descriptions change no vector, so the FAISS indices stay current.
        """
        with self._transaction(bump=False):
            self._dirty = True
            for d in rows:
                self.db.execute(
                    "INSERT OR REPLACE INTO descriptions (content_hash, start_s, end_s, concept, model, revision, "
                    "prompt_version, text, status, error) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    [d.content_hash, span_key(d.start), span_key(d.end), d.concept, d.key.model, d.key.revision,
                     d.key.prompt_version, d.text, d.status, d.error])

    def undescribed_units(self, key: DescriberKey, concepts: Sequence[str]) -> list[UnitRow]:
        """Units of indexed files lacking any of ``concepts`` from ``key``: one per distinct bytes and span."""
        if not self._has_table("descriptions"):
            return []
        rows = self.db.execute(
            """SELECT u.unit_id, f.path, u.segment, u.start_s, u.end_s, f.content_hash, u.frame_times
               FROM units u JOIN files f USING (file_id)
               WHERE f.status = 'ok' AND f.content_hash IS NOT NULL AND (
                   SELECT count(DISTINCT d.concept) FROM descriptions d
                   WHERE d.content_hash = f.content_hash AND d.start_s = round(u.start_s, 3)
                     AND d.end_s = round(u.end_s, 3) AND d.model = ? AND d.revision = ?
                     AND d.prompt_version = ? AND d.concept IN (SELECT unnest(?::VARCHAR[]))) < ?
               ORDER BY f.path, u.segment""",
            [key.model, key.revision, key.prompt_version, list(concepts), len(set(concepts))]).fetchall()
        seen, units = set(), []
        for r in rows:
            span = (r[5], span_key(r[3]), span_key(r[4]))
            if span not in seen:  # the same bytes under two names are described once
                seen.add(span)
                units.append(UnitRow(unit_id=r[0], path=r[1], segment=r[2], start=r[3], end=r[4],
                                     content_hash=r[5], frame_times=tuple(r[6] or ())))
        return units

    def unit_descriptions(self, unit_id: int, key: DescriberKey | None = None) -> list[Description]:
        """Every stored answer about one unit (``key``: only that model's, asked that way)."""
        where, args = "u.unit_id = ?", [int(unit_id)]
        return self._descriptions(where, args, key)

    def concept_descriptions(self, concept: str, key: DescriberKey | None = None) -> dict[int, Description]:
        """unit_id -> the stored answer about ``concept`` of every unit that has one (``key``: from that model)."""
        found = self._descriptions("d.concept = ?", [concept], key, with_units=True)
        return dict(found)

    def descriptions_of(self, concept: str) -> list[tuple[int, Description]]:
        """(unit id, answer) for every stored answer about ``concept``, by unit, oldest answer first."""
        return self._descriptions("d.concept = ?", [concept], None, with_units=True)

    def file_descriptions(self, path: str, concept: str, key: DescriberKey) -> list[Description | None]:
        """One file's units in segment order, each with its answer about ``concept`` from ``key`` (None: none)."""
        if not self._has_table("descriptions"):
            return []
        rows = self.db.execute(
            f"""SELECT {_DESCRIPTION_COLUMNS} FROM units u JOIN files f USING (file_id)
                LEFT JOIN descriptions d ON d.content_hash = f.content_hash AND d.start_s = round(u.start_s, 3)
                     AND d.end_s = round(u.end_s, 3) AND d.concept = ? AND d.model = ? AND d.revision = ?
                     AND d.prompt_version = ?
                WHERE f.path = ? ORDER BY u.segment""",
            [concept, key.model, key.revision, key.prompt_version, path]).fetchall()
        return [_description(r) if r[3] is not None else None for r in rows]

    def file_units(self, path: str) -> list[UnitRecord]:
        """One indexed file's units, in segment order."""
        rows = self.db.execute(
            f"""SELECT u.segment, u.start_s, u.end_s, u.frame_times, {self.column("units", "u", "boundary")},
                       {self.column("units", "u", "confidence")}
               FROM units u JOIN files f USING (file_id) WHERE f.path = ? ORDER BY u.segment""", [path]).fetchall()
        return [UnitRecord(r[0], r[1], r[2], tuple(r[3] or ()), r[4], r[5]) for r in rows]

    def shot_summary(self) -> dict:
        """Over every unit: how many start at a detected cut, at a split of a long shot, at a file's start, the
        cuts' mean confidence and the units' mean length in seconds."""
        boundary, confidence = self.column("units", "u", "boundary"), self.column("units", "u", "confidence")
        rows = self.db.execute(f"SELECT {boundary}, count(*), avg({confidence}) FROM units u GROUP BY 1").fetchall()
        counts = {b: (n, mean) for b, n, mean in rows}
        length = self.db.execute("SELECT avg(end_s - start_s) FROM units").fetchone()[0]
        cut_confidence = counts.get("cut", (0, None))[1]
        return {"cuts": counts.get("cut", (0, None))[0], "splits": counts.get("split", (0, None))[0],
                "file_starts": counts.get("start", (0, None))[0],
                "mean_cut_confidence": None if cut_confidence is None else round(cut_confidence, 4),
                "mean_unit_seconds": None if length is None else round(length, 3)}

    def file_fps(self, path: str) -> float | None:
        """The frame rate an indexed file was decoded at (None: not indexed)."""
        row = self.db.execute("SELECT fps FROM files WHERE path = ? AND status = 'ok'", [path]).fetchone()
        return float(row[0]) if row and row[0] else None

    def unit_ids(self, path: str) -> list[int]:
        """One indexed file's unit ids, in segment order."""
        rows = self.db.execute("SELECT u.unit_id FROM units u JOIN files f USING (file_id) WHERE f.path = ? "
                               "ORDER BY u.segment", [path]).fetchall()
        return [int(r[0]) for r in rows]

    def _descriptions(self, where: str, args: list, key: DescriberKey | None, with_units: bool = False):
        if not self._has_table("descriptions"):
            return []
        if key is not None:
            where += " AND d.model = ? AND d.revision = ? AND d.prompt_version = ?"
            args = [*args, key.model, key.revision, key.prompt_version]
        rows = self.db.execute(
            f"""SELECT {_DESCRIPTION_COLUMNS}, u.unit_id FROM units u JOIN files f USING (file_id)
                JOIN descriptions d ON d.content_hash = f.content_hash AND d.start_s = round(u.start_s, 3)
                     AND d.end_s = round(u.end_s, 3)
                WHERE {where} ORDER BY u.unit_id, d.concept, d.created_at""", args).fetchall()
        if with_units:
            return [(r[-1], _description(r[:-1])) for r in rows]
        return [_description(r[:-1]) for r in rows]

    def chosen_texts(self, concept: str, prefer: Sequence[DescriberKey] = ()) -> dict[int, str]:
        """unit id -> the one readable description of ``concept`` (``caption``: the caption) that stands for the
        unit, when several sources describe it: a file (a person's own words), then the models in ``prefer``
        (a run's captioner), then the latest stored answer."""
        order = [FILE_KEY, *prefer]
        best: dict[int, tuple[int, str]] = {}
        for unit_id, d in self.descriptions_of(concept):  # oldest first: a later answer of equal rank wins
            if d.status != "ok" or not d.text:
                continue
            rank = order.index(d.key) if d.key in order else len(order)
            if unit_id not in best or rank <= best[unit_id][0]:
                best[unit_id] = (rank, d.text)
        return {unit_id: text for unit_id, (_, text) in best.items()}

    def described_concepts(self) -> list[str]:
        """The concepts some unit has a readable description of (the caption is no concept)."""
        if not self._has_table("descriptions"):
            return []
        rows = self.db.execute("SELECT DISTINCT concept FROM descriptions WHERE status = 'ok' AND concept <> ? "
                               "ORDER BY concept", [CAPTION_KEY]).fetchall()
        return [r[0] for r in rows]

    def vector_sources(self, indexer: str) -> dict[int, str | None]:
        """unit id -> what each of ``indexer``'s vectors was made from (a digest of its text), for derived vectors
        that are kept in step with their source."""
        rows = self.db.execute("SELECT unit_id, source FROM embeddings WHERE indexer = ?", [indexer]).fetchall()
        return {int(u): s for u, s in rows}

    def put_unit_vectors(self, indexer: str, vectors: dict[int, tuple[np.ndarray, str]],
                         drop: Sequence[int] = ()) -> None:
        """Set ``indexer``'s vectors of some units (unit id -> (vector, source)) and remove those of ``drop``,
        in one transaction."""
        with self._transaction():
            gone = [*map(int, drop), *map(int, vectors)]
            self.db.execute("DELETE FROM embeddings WHERE indexer = ? AND unit_id IN (SELECT unnest(?::BIGINT[]))",
                            [indexer, gone])
            for unit_id, (vector, source) in vectors.items():
                vec = np.ascontiguousarray(vector, dtype=np.float32).tobytes()
                self.db.execute("INSERT INTO embeddings (unit_id, indexer, vector, source) VALUES (?, ?, ?, ?)",
                                [int(unit_id), indexer, vec, source])

    def description_count(self) -> int:
        if not self._has_table("descriptions"):
            return 0
        return self.db.execute("SELECT count(*) FROM descriptions").fetchone()[0]

    def _has_table(self, name: str) -> bool:
        # a catalog written before a table existed, opened read-only, has no such table: it holds nothing
        return bool(self.db.execute(
            "SELECT count(*) FROM information_schema.tables WHERE table_name = ?", [name]).fetchone()[0])

    def column(self, table: str, alias: str, name: str) -> str:
        """``alias.name`` for a query, or NULL where a catalog written before the column existed, opened
        read-only, lacks it (its rows hold nothing there)."""
        found = self.db.execute("SELECT count(*) FROM information_schema.columns WHERE table_name = ? AND "
                                "column_name = ?", [table, name]).fetchone()[0]
        return f"{alias}.{name}" if found else "NULL"

    # -- reads --------------------------------------------------------------
    def vectors(self, indexer: str) -> tuple[np.ndarray, np.ndarray]:
        """(unit_ids int64, matrix float32) of every vector from ``indexer``."""
        rows = self.db.execute(
            "SELECT unit_id, vector FROM embeddings WHERE indexer = ? ORDER BY unit_id", [indexer]
        ).fetchall()
        if not rows:
            # an indexer with no vectors yet still has its width: queries must fit the empty index
            dim = self.db.execute("SELECT dim FROM indexers WHERE indexer = ?", [indexer]).fetchone() or (
                self._has_table("description_signals") and self.db.execute(
                    "SELECT dim FROM description_signals WHERE signal = ?", [indexer]).fetchone())
            return np.zeros(0, np.int64), np.zeros((0, dim[0] if dim else 0), np.float32)
        ids = np.array([r[0] for r in rows], dtype=np.int64)
        matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(len(rows), -1)
        return ids, matrix.copy()

    def vectors_of(self, indexer: str, unit_ids: Sequence[int]) -> dict[int, np.ndarray]:
        """The stored vectors from ``indexer`` of ``unit_ids`` (those that have one): the exact values scores use."""
        rows = self.db.execute(
            "SELECT unit_id, vector FROM embeddings WHERE indexer = ? AND unit_id IN (SELECT unnest(?::BIGINT[]))",
            [indexer, [int(u) for u in unit_ids]],
        ).fetchall()
        return {int(u): np.frombuffer(v, dtype=np.float32) for u, v in rows}

    def vector_count_both(self, first: str, second: str) -> int:
        """How many units have a vector from both signals (a signal composed of the two has that many)."""
        return self.db.execute("SELECT count(*) FROM embeddings a JOIN embeddings b USING (unit_id) "
                               "WHERE a.indexer = ? AND b.indexer = ?", [first, second]).fetchone()[0]

    def vector_count(self, indexer: str) -> int:
        return self.db.execute("SELECT count(*) FROM embeddings WHERE indexer = ?", [indexer]).fetchone()[0]

    def unit_vectors(self, path: str, indexer: str) -> np.ndarray:
        rows = self.db.execute(
            """SELECT e.vector FROM embeddings e JOIN units u USING (unit_id) JOIN files f USING (file_id)
               WHERE f.path = ? AND e.indexer = ? ORDER BY u.segment""",
            [path, indexer],
        ).fetchall()
        if not rows:
            return np.zeros((0, 0), np.float32)
        return np.frombuffer(b"".join(r[0] for r in rows), dtype=np.float32).reshape(len(rows), -1).copy()

    def units(self, unit_ids: Sequence[int]) -> dict[int, UnitRow]:
        rows = self.db.execute(
            """SELECT u.unit_id, f.path, u.segment, u.start_s, u.end_s, f.content_hash, u.frame_times
               FROM units u JOIN files f USING (file_id) WHERE u.unit_id IN (SELECT unnest(?::BIGINT[]))""",
            [list(map(int, unit_ids))],
        ).fetchall()
        return {r[0]: UnitRow(unit_id=r[0], path=r[1], segment=r[2], start=r[3], end=r[4], content_hash=r[5],
                              frame_times=tuple(r[6] or ())) for r in rows}

    def files_by_hash(self, content_hash: str) -> list[str]:
        rows = self.db.execute(
            "SELECT path FROM files WHERE content_hash = ? AND status = 'ok'", [content_hash]
        ).fetchall()
        return [r[0] for r in rows]

    def summary(self) -> dict:
        files = dict(self.db.execute("SELECT status, count(*) FROM files GROUP BY status").fetchall())
        units = self.db.execute("SELECT count(*) FROM units").fetchone()[0]
        per_indexer = dict(self.db.execute("SELECT indexer, count(*) FROM embeddings GROUP BY indexer").fetchall())
        failures = self.db.execute(
            "SELECT path, error FROM files WHERE status = 'failed' ORDER BY path"
        ).fetchall()
        return {
            "files_ok": files.get("ok", 0),
            "files_failed": files.get("failed", 0),
            "units": units,
            "vectors": per_indexer,
            "failures": [{"path": p, "error": e} for p, e in failures],
            "segment_seconds": self.setting("segment_seconds"),
            "generation": self.generation,
        }


@dataclass(frozen=True)
class FileListing:
    """One file as the index knows it: what `convis ls` and the web app's collection show."""

    path: str
    status: str  # ok or failed
    error: str | None  # why it failed
    duration: float | None
    width: int | None
    height: int | None
    units: tuple[tuple[int, float, float], ...]  # (segment, start, end) in seconds
    captioned: bool  # a text indexer holds a vector for it
    cuts: tuple[tuple[str | None, float | None], ...] = ()  # per unit: what starts it and the cut's confidence
    units_by: str | None = None  # how its units were cut (a ``retrieval.core.segmentation`` label)


def list_files(catalog: Catalog) -> list[FileListing]:
    """Every file of ``catalog`` by path, with its units and whether a caption was embedded for it."""
    boundary, confidence, units_by = (catalog.column(table, alias, name) for table, alias, name in (
        ("units", "u", "boundary"), ("units", "u", "confidence"), ("files", "f", "units_by")))
    rows = catalog.db.execute(
        f"""SELECT f.path, f.status, f.error, f.duration, f.width, f.height,
                  list((u.segment, u.start_s, u.end_s, {boundary}, {confidence}) ORDER BY u.segment)
                      FILTER (WHERE u.unit_id IS NOT NULL),
                  bool_or(e.unit_id IS NOT NULL), any_value({units_by})
           FROM files f
           LEFT JOIN units u USING (file_id)
           LEFT JOIN embeddings e ON e.unit_id = u.unit_id
                AND e.indexer IN (SELECT indexer FROM indexers WHERE kind = 'text')
           GROUP BY ALL ORDER BY f.path""").fetchall()
    return [FileListing(path, status, error, duration, width, height,
                        tuple((seg, start, end) for seg, start, end, _, _ in (units or [])), bool(captioned),
                        tuple((boundary, confidence) for _, _, _, boundary, confidence in (units or [])), units_by)
            for path, status, error, duration, width, height, units, captioned, units_by in rows]


_DESCRIPTION_COLUMNS = ("d.content_hash, d.start_s, d.end_s, d.concept, d.model, d.revision, d.prompt_version, "
                        "d.text, d.status, d.error")


def _description(r) -> Description:
    return Description(r[0], r[1], r[2], r[3], DescriberKey(r[4], r[5], r[6]), r[7], r[8], r[9])


def _sql_path(path: Path) -> str:
    return str(path).replace("'", "''")


class _Transaction:
    """BEGIN/COMMIT around a block, ROLLBACK on error; every write bumps the generation (unless it changes no
    vector: ``bump=False``)."""

    def __init__(self, catalog: Catalog, bump: bool = True):
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
            raise
        if exc_type is not None and is_disk_full(exc_value):
            raise DiskFull("committing to the catalog", self.catalog.path) from None
        return False


def _rollback(db: duckdb.DuckDBPyConnection) -> None:
    try:
        db.execute("ROLLBACK")
    except duckdb.Error:
        pass  # the failed COMMIT already ended the transaction
