"""Publishing what is derived from the catalog, after a writer changed it: one list, one function.

Every search reads files derived from the catalog beside it (the FAISS indices or Lance tables, the keyword index)
or tables drawn from its vectors (each signal's background), and readers read a snapshot of the catalog while a writer
holds it.  Whoever commits a change (an index run, a describe run, a remove, its undo) calls ``publish``, which
brings each of them up to date in the order of ``DERIVED``; a new derived file is one more entry there.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from retrieval.store import backgrounds
from retrieval.store.catalog import Catalog
from retrieval.store.keyword import sync as keyword_sync  # bm25s itself is imported only when an index is built
from retrieval.store.snapshots import SNAPSHOT_NAME
from retrieval.store.vectors import lance_sync
from retrieval.store.vectors.policy import rebuild_indices


@dataclass(frozen=True)
class Derived:
    """One thing derived from the catalog: ``write(catalog, index_dir)`` brings it up to date with the catalog."""

    name: str
    write: Callable[[Catalog, Path], object]


def _backgrounds(catalog: Catalog, index_dir: Path) -> None:
    backgrounds.refresh(catalog)


def _snapshot(catalog: Catalog, index_dir: Path) -> None:
    catalog.snapshot(index_dir / SNAPSHOT_NAME)


# In order: backgrounds are drawn into the catalog and the FAISS indices record their factories there, so the
# snapshot, which copies the catalog for readers, comes last.
DERIVED: list[Derived] = [
    Derived("backgrounds", _backgrounds),  # each signal's, drawn from the units it has now
    Derived("faiss", rebuild_indices),  # saved FAISS indices must not recall removed units, nor miss new ones
    Derived("lance", lance_sync.publish),  # nor Lance tables (--store lance: appended, where FAISS is rebuilt)
    Derived("keyword", keyword_sync.refresh),  # nor the keyword index (rebuilt only when the texts changed)
    Derived("snapshot", _snapshot),
]


def publish(catalog: Catalog, index_dir: Path) -> None:
    """Bring everything derived from ``catalog`` (the writer's, its change committed) up to date in ``index_dir``."""
    for derived in DERIVED:
        derived.write(catalog, index_dir)
