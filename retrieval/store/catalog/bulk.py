"""Many rows into a catalog table in one statement: an Arrow table registered with DuckDB and inserted whole.

A statement a row took minutes for the 291k cues of one long subtitle file; the table takes a second.  Every row
is checked before it joins the table (``storable``), so one that DuckDB could not take costs that row alone,
not the whole insert.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

import duckdb
import pyarrow as pa

from retrieval.store.where import storable


@contextmanager
def registered(db: duckdb.DuckDBPyConnection, name: str, table: pa.Table) -> Iterator[str]:
    """``table`` readable in SQL as ``name`` while the block runs."""
    db.register(name, table)
    try:
        yield name
    finally:
        db.unregister(name)


def all_storable(*texts: str | None) -> bool:
    """Whether every text given (None: no value) can be written as UTF-8."""
    return all(t is None or (isinstance(t, str) and storable(t)) for t in texts)
