"""The Lance tables an index serves its vectors from, kept in step with the catalog (``--store lance``).

The catalog stays the source of truth for vectors; each signal's Lance table is derived from it, as a FAISS file
is, but appended to rather than rebuilt: a publish appends the units the table does not hold yet (a new version a
part of ``APPEND_ROWS``), deletes those the catalog no longer searches, and lets the table retrain its ANN index
only past its growth threshold.  A publish killed midway leaves the table behind the catalog, never ahead of it
nor doubled (held unit ids are skipped), and the next one appends the difference: moving an existing FAISS index
to Lance is the first publish, resumable the same way.

Each publish records every table's version in the catalog (``VERSION`` + signal), before the snapshot readers read
is taken.  Readers keep one open table per signal for the life of the process and move it to the newest version
once the catalog they read records a newer one than it holds, so a serving process sees each publish at its next
query (the catalog's or its snapshot's, whichever it reads) and every search reads one committed version.  A unit
recalled from a version ahead of the catalog a reader reads has no stored vector there and drops out, as a stale
FAISS file's would: scores always come from the catalog.
"""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np

from retrieval.store.catalog import Catalog
from retrieval.store.errors import IndexSettingsError
from retrieval.store.vectors import signals as signal_vectors
from retrieval.store.vectors.lance_store import LanceLocation, LanceVectors
from retrieval.store.vectors.store_setting import FAISS, STORE, store_of

VERSION = "lance_version:"  # catalog setting + signal: the version of its table the last publish left
APPEND_ROWS = 100_000  # rows one version appends: a migration of millions commits (and resumes) in parts
_OPEN: dict[tuple[str, str], LanceVectors] = {}  # (uri, signal) -> the table this process reads
_OPEN_LOCK = threading.Lock()


def check_store(spec: str | None) -> str | None:
    """``spec`` as the catalog keeps it ("faiss", "lance", "lance:s3://b/p", "lance:/absolute/folder"), or None
    when not given; a wrong one fails before anything is indexed."""
    if spec is None:
        return None
    spec = spec.strip()
    if spec.lower() == FAISS:
        return FAISS
    try:
        location = LanceLocation.parse(spec, Path("."))
    except ValueError as exc:
        raise IndexSettingsError(f"--store {spec!r}: {exc}; or faiss") from None
    # a relative folder is the caller's: kept absolute so a later run from elsewhere finds the same tables
    return spec if spec == "lance" or location.uri.startswith("s3://") else f"lance:{location.uri}"


def configure_store(catalog: Catalog, spec: str | None) -> None:
    """Record where this index serves its vectors from (``spec`` None: as before, FAISS by default)."""
    spec = check_store(spec)
    if spec is not None:
        catalog.set_setting(STORE, spec)


def location(catalog: Catalog, index_dir: Path) -> LanceLocation | None:
    """Where this index's Lance tables are, or None when it serves from FAISS."""
    spec = store_of(catalog)
    return None if spec == FAISS else LanceLocation.parse(spec, Path(index_dir))


def publish(catalog: Catalog, index_dir: Path) -> dict[str, int]:
    """Bring every signal's Lance table up to date with ``catalog``: signal -> its version now (nothing for a FAISS
    index)."""
    where = location(catalog, index_dir)
    if where is None:
        return {}
    versions = {signal: sync_signal(catalog, LanceVectors(where, signal), signal)
                for signal in signal_vectors.index_signals(catalog)}
    for signal, version in versions.items():
        catalog.set_setting(VERSION + signal, str(version))  # what moves readers on (see ``reader``)
    return versions


def sync_signal(catalog: Catalog, table: LanceVectors, signal: str) -> int:
    """Append the units of ``signal`` that ``table`` lacks, delete those the catalog no longer searches, maybe
    retrain its ANN index; returns the table's version."""
    table.checkout_latest()
    wanted, held = signal_vectors.ids_of(catalog, signal), table.unit_ids()
    gone = np.setdiff1d(held, wanted)
    if len(gone):
        table.delete(gone)
    missing = np.setdiff1d(wanted, held)
    for start in range(0, len(missing), APPEND_ROWS):
        part = missing[start:start + APPEND_ROWS].tolist()
        stored = signal_vectors.vectors_of(catalog, signal, part)
        ids = np.array([u for u in part if u in stored], np.int64)
        if len(ids):
            table.append(ids, np.stack([stored[int(u)] for u in ids]))
    table.maybe_reindex()
    return table.version


def reader(catalog: Catalog, index_dir: Path, signal: str) -> LanceVectors | None:
    """This process's open table of ``signal`` at the version ``catalog`` records (a publish's end, never a
    publish under way: its units and the catalog's agree), else the newest; None for a FAISS index or a table not
    written yet (the caller searches the catalog's vectors)."""
    where = location(catalog, index_dir)
    if where is None:
        return None
    published = int(catalog.setting(VERSION + signal) or 0)
    with _OPEN_LOCK:
        table = _OPEN.get((where.uri, signal))
        if table is None:
            table = _OPEN[(where.uri, signal)] = LanceVectors(where, signal)
        if published and table.version != published and not table.checkout(published) \
                and table.version < published:
            table.checkout_latest()  # a version this table lacks (cleaned up): the newest it has
    return table if table.size else None
