"""An index written out as columnar files: its files, units, descriptions, timed text lines, each signal's
vectors, and any other table the catalog keeps of its files or units, with a manifest naming the index they came from.

Only reads: the catalog is opened as every reader opens it (``index_dir.reading``: the published snapshot while
a writer such as an index run or the server holds the file), and nothing is written beside it.
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Iterator

import numpy as np
import pyarrow as pa

from retrieval.store.catalog import Catalog
from retrieval.store.catalog.connection import SCHEMA_VERSION
from retrieval.store.export.files import (
    EXPORT_VERSION,
    Written,
    check_format,
    copy_arrow,
    copy_query,
    prepare_out,
    write_manifest,
)
from retrieval.store.index_dir import protocol_of, reading, root_of
from retrieval.store.snapshots import SNAPSHOT_NAME
from retrieval.store.vectors import lance_sync
from retrieval.store.vectors.lance_store import LanceLocation, LanceVectors

VECTOR_BATCH = 16_384  # vectors converted at a time
# tables the export writes in its own shape (vectors, descriptions) or that hold no file's data: the index's
# settings, its models, its folders' devices, the confidence backgrounds, and the files taken out of it
# (`convis remove`: no listing shows them)
OWN_SHAPE = {"files", "units", "embeddings", "descriptions", "text_lines"}
NOT_EXPORTED = {"settings", "indexers", "description_signals", "excluded", "folders", "backgrounds",
                "removed_files", "removed_units", "removed_embeddings"}

FILES = "SELECT * FROM files ORDER BY path"
# each unit with its file's columns (duration, size, any metadata the catalog keeps of files); where both have a
# column of one name, the unit's is kept
UNITS = """SELECT f.path, u.*, f.* EXCLUDE ({shared}) FROM units u JOIN files f ON f.file_id = u.file_id
    ORDER BY f.path, u.segment"""
# a description is kept by the bytes and span it describes: one row for each unit of those bytes and span
DESCRIPTIONS = """SELECT u.unit_id, f.path, u.segment, u.start_s, u.end_s, d.* EXCLUDE (start_s, end_s)
    FROM descriptions d JOIN files f ON f.content_hash = d.content_hash
    JOIN units u ON u.file_id = f.file_id AND d.start_s = round(u.start_s, 3) AND d.end_s = round(u.end_s, 3)
    ORDER BY f.path, u.segment, d.concept, d.model, d.revision, d.prompt_version"""
# a line is kept by the bytes it was read from: one row for each file of those bytes, with its path
TEXT_LINES = """SELECT f.path, l.* FROM text_lines l JOIN files f ON f.content_hash = l.content_hash
    ORDER BY f.path, l.start_s, l.source, l.origin, l.seq"""
VECTORS = """SELECT e.unit_id, f.path, u.segment, u.start_s, u.end_s, e.vector
    FROM embeddings e JOIN units u ON u.unit_id = e.unit_id JOIN files f ON f.file_id = u.file_id
    WHERE e.indexer = ? ORDER BY f.path, u.segment"""
KEYS = VECTORS.replace(", e.vector", "")  # the same rows, their vectors read from the index's Lance table
VECTOR_SCHEMA = pa.schema([("unit_id", pa.int64()), ("path", pa.string()), ("segment", pa.int32()),
                           ("start_s", pa.float64()), ("end_s", pa.float64()), ("vector", pa.list_(pa.float32()))])


def export_index(index_dir: Path, out: Path, fmt: str = "parquet", force: bool = False,
                 notices: list[str] | None = None) -> dict:
    """Write the index in ``index_dir`` to the folder ``out`` as ``fmt`` files and return the manifest (also
    written there as manifest.json); why a snapshot was read goes to ``notices`` and the manifest."""
    notices = [] if notices is None else notices
    check_format(fmt)
    with reading(index_dir, notices) as catalog:  # no index: said before a folder is made
        out = prepare_out(out, force, inside=index_dir)
        lance = lance_sync.location(catalog, index_dir)
        written = [*_tables(catalog, out, fmt), *_vector_tables(catalog, out, fmt, lance)]
        manifest = {"convis_export": EXPORT_VERSION, "format": fmt,
                    "exported_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                    "index": _identity(catalog, index_dir), "notices": list(notices),
                    "tables": [w.as_dict() for w in written]}
    write_manifest(out, manifest)
    return manifest


def _identity(catalog: Catalog, index_dir: Path) -> dict:
    """Which index, in which state, the export holds: its folder, the folder it covers, its generation (bumped by
    every change of its vectors) and the catalog's schema."""
    return {"index_dir": str(Path(index_dir).resolve()), "root": str(root_of(catalog, index_dir)),
            "generation": catalog.generation, "schema_version": catalog.setting("schema_version") or SCHEMA_VERSION,
            "protocol": protocol_of(catalog),
            "read_from": "snapshot" if catalog.path.name == SNAPSHOT_NAME else "catalog"}


def _tables(catalog: Catalog, out: Path, fmt: str) -> Iterator[Written]:
    """files, units, descriptions, then every other table of the catalog keyed by file or unit."""
    tables = _columns(catalog)
    yield copy_query(catalog.db, FILES, out, "files", fmt)
    shared = ", ".join(_quoted(c) for c in sorted(tables["files"] & tables["units"] | {"path"}))
    yield copy_query(catalog.db, UNITS.format(shared=shared), out, "units", fmt)
    yield copy_query(catalog.db, DESCRIPTIONS, out, "descriptions", fmt)
    # on-screen text, subtitles and speech, each line with its time
    yield copy_query(catalog.db, TEXT_LINES, out, "text_lines", fmt)
    for table, columns in tables.items():
        keys = {"file_id", "unit_id", "path"} & columns
        if keys and table not in OWN_SHAPE | NOT_EXPORTED:
            # what a later catalog keeps of files or units (fields, tags): exported as the catalog keeps it
            yield copy_query(catalog.db, _keyed_query(table, keys), out, table, fmt)


def _columns(catalog: Catalog) -> dict[str, set[str]]:
    """table -> its column names, of every table of the catalog."""
    rows = catalog.db.execute(
        "SELECT table_name, list(column_name) FROM information_schema.columns WHERE table_catalog = "
        "current_database() AND table_schema = current_schema() GROUP BY table_name ORDER BY table_name").fetchall()
    return {table: set(columns) for table, columns in rows}


def _keyed_query(table: str, keys: set[str]) -> str:
    """A table's rows with the path (and segment) of the file (unit) each is about, for a reader to join on."""
    name = _quoted(table)
    if "unit_id" in keys and "path" not in keys:
        return (f"SELECT f.path, u.segment, t.* FROM {name} t JOIN units u ON u.unit_id = t.unit_id "
                "JOIN files f ON f.file_id = u.file_id ORDER BY f.path, u.segment")
    if "file_id" in keys and "path" not in keys:
        return f"SELECT f.path, t.* FROM {name} t JOIN files f ON f.file_id = t.file_id ORDER BY f.path"
    return f"SELECT * FROM {name} ORDER BY path"


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _vector_tables(catalog: Catalog, out: Path, fmt: str, lance: LanceLocation | None) -> Iterator[Written]:
    """One table per signal the catalog stores vectors of (each indexer, each concept's description signal); an
    index served from Lance has them read from its tables (``lance``), the units recall searches."""
    taken: set[str] = set()
    for signal, about in _signals(catalog).items():
        name = _table_name(about.pop("short"), taken)
        rows = _vectors(catalog, signal) if lance is None else _lance_vectors(catalog, LanceVectors(lance, signal))
        yield copy_arrow(rows, out, name, fmt, {"signal": signal, **about})


def _signals(catalog: Catalog) -> dict[str, dict]:
    """signal -> what it is (kind, width, for a description signal its indexer and concept) and its short name
    (the indexer's, with the concept of a description signal)."""
    signals = {row.indexer: {"kind": row.kind, "model": row.name, "dim": row.dim, "short": row.name or row.indexer}
               for row in catalog.indexers()}
    for row in catalog.description_signals():
        short = f"{signals.get(row.indexer, {}).get('short', row.indexer)}.{row.concept}"
        signals[row.signal] = {"kind": "description", "indexer": row.indexer, "concept": row.concept, "dim": row.dim,
                               "short": short}
    return signals


def _table_name(short: str, taken: set[str]) -> str:
    """``vectors.<short name>`` with what a file name cannot hold as ``_``; unique among the export's tables."""
    base = "vectors." + re.sub(r"[^A-Za-z0-9._-]+", "_", short).strip("._")
    name, n = base, 2
    while name in taken:
        name, n = f"{base}.{n}", n + 1
    taken.add(name)
    return name


def _vectors(catalog: Catalog, signal: str) -> pa.RecordBatchReader:
    """``signal``'s vectors with their units' keys, as a stream of Arrow batches (the bytes read as float32)."""
    batches = _stream(catalog.db.sql(VECTORS, params=[signal]))
    return pa.RecordBatchReader.from_batches(VECTOR_SCHEMA, (_as_floats(b) for b in batches))


def _lance_vectors(catalog: Catalog, table: LanceVectors) -> pa.RecordBatchReader:
    """The rows ``_vectors`` reads, for the units ``table`` holds, their vectors read from it a batch at a time."""
    held = table.unit_ids()

    def batches() -> Iterator[pa.RecordBatch]:
        for keys in _stream(catalog.db.sql(KEYS, params=[table.signal])):
            keys = keys.filter(pa.array(np.isin(keys.column("unit_id").to_numpy(), held)))
            vectors = table.vectors(keys.column("unit_id").to_numpy()) if keys.num_rows else np.zeros((0, 1))
            flat = pa.array(vectors.astype(np.float32).ravel(), pa.float32())
            offsets = pa.array(np.arange(keys.num_rows + 1, dtype=np.int32) * vectors.shape[1])
            yield pa.RecordBatch.from_arrays([*keys.columns, pa.ListArray.from_arrays(offsets, flat)],
                                             schema=VECTOR_SCHEMA)
    return pa.RecordBatchReader.from_batches(VECTOR_SCHEMA, batches())


def _stream(rows) -> Iterator[pa.RecordBatch]:
    stream = getattr(rows, "to_arrow_reader", None) or rows.fetch_arrow_reader  # its name before DuckDB 1.4
    return iter(stream(VECTOR_BATCH))


def _as_floats(batch: pa.RecordBatch) -> pa.RecordBatch:
    """A batch with its vectors' bytes read as float32 lists, from the Arrow buffers themselves: no Python object a
    vector (a hundred times faster than a list of bytes)."""
    stored = batch.column("vector")
    if not len(stored):  # an empty batch may have no buffers to read
        return pa.RecordBatch.from_pylist([], schema=VECTOR_SCHEMA)
    wide = pa.types.is_large_binary(stored.type)
    ends = np.frombuffer(stored.buffers()[1], np.int64 if wide else np.int32)[stored.offset:
                                                                              stored.offset + len(stored) + 1]
    floats = np.frombuffer(stored.buffers()[2], np.uint8)[ends[0]:ends[-1]].view(np.float32)
    vectors = pa.ListArray.from_arrays(pa.array(((ends - ends[0]) // 4).astype(np.int32)),
                                       pa.array(floats, type=pa.float32()))
    columns = [batch.column(n).cast(VECTOR_SCHEMA.field(n).type) for n in VECTOR_SCHEMA.names[:-1]]
    return pa.RecordBatch.from_arrays([*columns, vectors], schema=VECTOR_SCHEMA)
