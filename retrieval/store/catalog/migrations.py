"""The catalog's schema as numbered steps: a new catalog is the result of applying steps 1..LATEST in order to an
empty file, and the ``schema_version`` setting records the last step applied.

Every open for writing applies the pending steps in one transaction (``migrate``); a read-only open of a catalog
that has some pending reads an upgraded copy of it in memory (``upgraded_copy``), so a query never needs write
access.  A catalog written before its schema was numbered says "1" whatever its age, so each step after the first
is written to apply to a catalog that may already hold what it adds (``IF NOT EXISTS``).  A new table or column is a
new step at the end; a step already released is never changed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import duckdb

FAISS_FOLDER = "faiss"  # beside the catalog (``retrieval.store.vectors.faiss_index.FOLDER``)


@dataclass(frozen=True)
class Migration:
    """One step of the schema: what it adds, and how (``apply(db, index_dir)``; no index folder when the catalog
    is upgraded in memory, where derived files are left as they are)."""

    number: int
    adds: str
    apply: Callable[[duckdb.DuckDBPyConnection, Path | None], None]


def _sql(statements: str) -> Callable[[duckdb.DuckDBPyConnection, Path | None], None]:
    def apply(db: duckdb.DuckDBPyConnection, _index_dir: Path | None) -> None:
        db.execute(statements)

    return apply


def _faiss_files_name_their_signal(_db: duckdb.DuckDBPyConnection, index_dir: Path | None) -> None:
    """Remove the FAISS files whose sidecar names no signal or no checksum (written before sidecars held them):
    the file of one signal then had a name several signals could have written. They are derived from the
    catalog, which builds them again when they are next needed."""
    folder = None if index_dir is None else index_dir / FAISS_FOLDER
    if folder is None or not folder.is_dir():
        return
    for sidecar in folder.glob("*.json"):
        try:
            named = {"signal", "crc32"} <= json.loads(sidecar.read_text()).keys()
        except (OSError, ValueError, AttributeError):
            named = False  # unreadable: loading it would fail too
        if not named:
            sidecar.with_suffix(".faiss").unlink(missing_ok=True)
            sidecar.unlink(missing_ok=True)


def _line_sources_in_one_setting(db: duckdb.DuckDBPyConnection, _index_dir: Path | None) -> None:
    """The timed-line sources a user asked for, kept in two settings before (``line_readers``: a JSON list of the
    frame readers' specs; ``speech``: the recogniser's spec), move into one (``line_sources``: JSON {source:
    [specs]}), which ``retrieval.pipeline.line_sources`` reads."""
    settings = dict(db.execute("SELECT key, value FROM settings WHERE key IN "
                               "('line_readers', 'speech', 'line_sources')").fetchall())
    if "line_sources" in settings:
        return
    try:
        readers = json.loads(settings.get("line_readers") or "[]")
    except ValueError:
        readers = []  # damaged by hand: the next run naming a reader writes the new setting whole
    kept = {}
    if isinstance(readers, list) and readers:
        kept["ocr"] = [s for s in readers if isinstance(s, str)]
    if settings.get("speech"):
        kept["speech"] = [settings["speech"]]
    if kept:
        db.execute("INSERT INTO settings VALUES ('line_sources', ?)", [json.dumps(kept)])
    db.execute("DELETE FROM settings WHERE key IN ('line_readers', 'speech')")


MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "files, their units and vectors, the indexers, the settings", _sql("""
        CREATE SEQUENCE IF NOT EXISTS file_ids START 1;
        CREATE SEQUENCE IF NOT EXISTS unit_ids START 1;
        CREATE TABLE IF NOT EXISTS settings (key VARCHAR PRIMARY KEY, value VARCHAR);
        CREATE TABLE IF NOT EXISTS files (
            file_id BIGINT PRIMARY KEY, path VARCHAR UNIQUE NOT NULL, size BIGINT, mtime DOUBLE,
            content_hash VARCHAR, duration DOUBLE, fps DOUBLE, width INTEGER, height INTEGER,
            frame_count INTEGER, decoder VARCHAR, status VARCHAR NOT NULL, error VARCHAR,
            indexed_at TIMESTAMP DEFAULT current_timestamp);
        CREATE TABLE IF NOT EXISTS units (
            unit_id BIGINT PRIMARY KEY, file_id BIGINT NOT NULL, segment INTEGER,
            start_s DOUBLE, end_s DOUBLE, frame_times DOUBLE[]);
        CREATE TABLE IF NOT EXISTS embeddings (
            unit_id BIGINT NOT NULL, indexer VARCHAR NOT NULL, vector BLOB NOT NULL,
            PRIMARY KEY (unit_id, indexer));
        CREATE TABLE IF NOT EXISTS indexers (
            indexer VARCHAR PRIMARY KEY, name VARCHAR, source VARCHAR, kind VARCHAR, dim INTEGER,
            frames INTEGER, faiss_factory VARCHAR);""")),
    Migration(2, "failures a later run tries again (files.transient)", _sql(
        "ALTER TABLE files ADD COLUMN IF NOT EXISTS transient BOOLEAN DEFAULT false")),
    Migration(3, "descriptions, by the file's bytes and span", _sql("""
        CREATE TABLE IF NOT EXISTS descriptions (
            content_hash VARCHAR NOT NULL, start_s DOUBLE NOT NULL, end_s DOUBLE NOT NULL, concept VARCHAR NOT NULL,
            model VARCHAR NOT NULL, revision VARCHAR NOT NULL, prompt_version VARCHAR NOT NULL, text VARCHAR,
            status VARCHAR NOT NULL, error VARCHAR, created_at TIMESTAMP DEFAULT current_timestamp,
            PRIMARY KEY (content_hash, start_s, end_s, concept, model, revision, prompt_version));""")),
    Migration(4, "what derived vectors were made from, shot units (their cut and its confidence)", _sql("""
        ALTER TABLE embeddings ADD COLUMN IF NOT EXISTS source VARCHAR;
        ALTER TABLE units ADD COLUMN IF NOT EXISTS boundary VARCHAR;
        ALTER TABLE units ADD COLUMN IF NOT EXISTS confidence DOUBLE;
        ALTER TABLE files ADD COLUMN IF NOT EXISTS units_by VARCHAR;""")),
    Migration(5, "description signals, files taken out of the index", _sql("""
        CREATE TABLE IF NOT EXISTS description_signals (
            signal VARCHAR PRIMARY KEY, indexer VARCHAR NOT NULL, concept VARCHAR NOT NULL, dim INTEGER,
            faiss_factory VARCHAR);
        CREATE TABLE IF NOT EXISTS excluded (
            path VARCHAR PRIMARY KEY, excluded_at TIMESTAMP DEFAULT current_timestamp);""")),
    Migration(6, "unavailable files and their folders' devices, score backgrounds", _sql("""
        ALTER TABLE files ADD COLUMN IF NOT EXISTS unavailable BOOLEAN DEFAULT false;
        CREATE TABLE IF NOT EXISTS folders (path VARCHAR PRIMARY KEY, device UBIGINT NOT NULL);
        CREATE TABLE IF NOT EXISTS backgrounds (
            signal VARCHAR PRIMARY KEY, units BIGINT NOT NULL, pairs BIGINT NOT NULL, q01 DOUBLE, q10 DOUBLE,
            q25 DOUBLE, q50 DOUBLE, q75 DOUBLE, q90 DOUBLE, q95 DOUBLE, q99 DOUBLE, generation BIGINT NOT NULL);""")),
    # made like the tables they keep (``removed``), which later steps may widen: a move adds what they gained
    Migration(7, "the rows of removed files, kept for an undo", _sql("""
        CREATE TABLE IF NOT EXISTS removed_files AS SELECT * FROM files LIMIT 0;
        CREATE TABLE IF NOT EXISTS removed_units AS SELECT * FROM units LIMIT 0;
        CREATE TABLE IF NOT EXISTS removed_embeddings AS SELECT * FROM embeddings LIMIT 0;""")),
    Migration(8, "each file's codec", _sql("ALTER TABLE files ADD COLUMN IF NOT EXISTS codec VARCHAR")),
    # kept across re-indexing; a number where the value reads as one
    Migration(9, "user fields by file path", _sql("""
        CREATE TABLE IF NOT EXISTS file_fields (
            path VARCHAR NOT NULL, key VARCHAR NOT NULL, value VARCHAR NOT NULL, number DOUBLE,
            source VARCHAR NOT NULL, PRIMARY KEY (path, key));""")),
    # on-screen text, subtitle cues, speech; line_runs says which (bytes, source, origin) were read, and of what
    # (a sidecar's size and mtime, a model's revision), lines or none
    Migration(10, "timed text lines by the file's bytes, and the reads that found them", _sql("""
        CREATE TABLE IF NOT EXISTS text_lines (
            content_hash VARCHAR NOT NULL, source VARCHAR NOT NULL, origin VARCHAR NOT NULL, seq INTEGER NOT NULL,
            start_s DOUBLE NOT NULL, end_s DOUBLE NOT NULL, text VARCHAR NOT NULL, confidence DOUBLE, box DOUBLE[],
            language VARCHAR, PRIMARY KEY (content_hash, source, origin, seq));
        CREATE TABLE IF NOT EXISTS line_runs (
            content_hash VARCHAR NOT NULL, source VARCHAR NOT NULL, origin VARCHAR NOT NULL, stamp VARCHAR NOT NULL,
            lines INTEGER NOT NULL, read_at TIMESTAMP DEFAULT current_timestamp,
            PRIMARY KEY (content_hash, source, origin));""")),
    Migration(11, "FAISS files whose sidecar names their signal", _faiss_files_name_their_signal),
    Migration(12, "the timed-line sources asked for, in one setting", _line_sources_in_one_setting),
    Migration(13, "each file's change time and inode (files.stat_key): a rewrite that kept size and mtime", _sql(
        "ALTER TABLE files ADD COLUMN IF NOT EXISTS stat_key VARCHAR")),
)
LATEST = MIGRATIONS[-1].number
VERSION_KEY = "schema_version"  # the catalog setting: the last step applied


def version(db: duckdb.DuckDBPyConnection) -> int:
    """The last step applied to the open catalog: 0 for an empty file; "1" for every catalog written before the
    schema was numbered."""
    tables = db.execute("SELECT count(*) FROM information_schema.tables WHERE table_name = 'settings'").fetchone()
    if not tables[0]:
        return 0
    row = db.execute("SELECT value FROM settings WHERE key = ?", [VERSION_KEY]).fetchone()
    return int(row[0]) if row else 1


def pending(db: duckdb.DuckDBPyConnection) -> list[Migration]:
    """The steps not yet applied (none to a catalog of a later release, which this one leaves as it is)."""
    current = version(db)
    return [m for m in MIGRATIONS if m.number > current]


def migrate(db: duckdb.DuckDBPyConnection, index_dir: Path | None) -> list[int]:
    """Apply the pending steps in one transaction and record the last; the numbers applied."""
    steps = pending(db)
    if not steps:
        return []
    db.execute("BEGIN TRANSACTION")
    try:
        for step in steps:
            step.apply(db, index_dir)
        db.execute("INSERT OR REPLACE INTO settings VALUES (?, ?)", [VERSION_KEY, str(steps[-1].number)])
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise
    return [step.number for step in steps]


def upgraded_copy(db: duckdb.DuckDBPyConnection, path: Path) -> duckdb.DuckDBPyConnection:
    """The catalog ``db`` reads (the file at ``path``) copied into memory with the pending steps applied; ``db``
    is closed.  A read-only file cannot be altered, and a query must not need write access."""
    copy = duckdb.connect()
    try:
        copy.execute(f"ATTACH '{str(path).replace(chr(39), chr(39) * 2)}' AS outdated (READ_ONLY)")
        copy.execute("COPY FROM DATABASE outdated TO memory")
        copy.execute("DETACH outdated")
        migrate(copy, None)
    except BaseException:
        copy.close()
        raise
    db.close()
    return copy
