"""A side cache: what convis made once (an anchor's vector, an LMM's edit or score), kept in a DuckDB file of its
own beside the index (or in the user's cache) and keyed by everything that made it, so it is made once.

A subclass names its file's table (``SCHEMA``, ``TABLE``), the columns a value is found by (``KEY``), those a
``get_many`` returns (``VALUE``) and those a ``put_many`` writes (``COLUMNS``, the key's first), and the
``VERSION`` of its entries: a file of another version is never read, and is emptied by the next write, so changing
how values are made is one bump.  A file holds its version in a one-row table (``VERSION_TABLE``); a file without
one is of ``FIRST``, the version every cache had before files held one.

Connections: a cache opened ``held`` keeps one connection for its life (the score cache, asked many times a
request: opening a DuckDB file costs milliseconds; DuckDB lets no other process in meanwhile), others open the
file for each read or write, so that a running server and the command line share it.  In one process, reads of a
file go together and a write goes alone (``FileTurns``): DuckDB refuses a read-only and a writing connection to one
file in one process.  A file that cannot be opened or written costs a line in the caller's notices, never the
request (``notices`` None: the error is raised).
"""

from __future__ import annotations

import hashlib
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import ClassVar, Iterator, Sequence

import duckdb

from retrieval.core.errors import one_line

VERSION_TABLE = "cache_version"
FIRST = "1"


def digest(*parts: str) -> str:
    """The key of a value made from ``parts`` (every one of them matters, in order)."""
    return hashlib.blake2b("\0".join(parts).encode(), digest_size=16).hexdigest()


class FileTurns:
    """Turns at one file in this process: any number of reads at once, a write alone.  A waiting write goes before
    reads that come after it, so a stream of reads never holds a request's write back for long."""

    def __init__(self):
        self._changed = threading.Condition()
        self._reading = 0
        self._writing = False
        self._waiting_writes = 0

    @contextmanager
    def read(self):
        with self._changed:
            self._changed.wait_for(lambda: not self._writing and not self._waiting_writes)
            self._reading += 1
        try:
            yield
        finally:
            with self._changed:
                self._reading -= 1
                self._changed.notify_all()

    @contextmanager
    def write(self):
        with self._changed:
            self._waiting_writes += 1
            self._changed.wait_for(lambda: not self._writing and not self._reading)
            self._waiting_writes -= 1
            self._writing = True
        try:
            yield
        finally:
            with self._changed:
                self._writing = False
                self._changed.notify_all()


_TURNS: dict[Path, FileTurns] = {}
_TURNS_LOCK = threading.Lock()


def turns_of(path: Path) -> FileTurns:
    """This process's turns at the file ``path``."""
    with _TURNS_LOCK:
        return _TURNS.setdefault(path.resolve(), FileTurns())


class SideCache:
    """One DuckDB file of values under their keys (see the module's notes); ``held``: one connection for its life."""

    LABEL: ClassVar[str]  # how notices name it: "anchor cache"
    LOST: ClassVar[str]  # what a notice says happens when the file cannot be used: "the anchor is embedded anew"
    TABLE: ClassVar[str]
    SCHEMA: ClassVar[str]  # CREATE TABLE IF NOT EXISTS TABLE (...)
    KEY: ClassVar[tuple[str, ...]]
    VALUE: ClassVar[tuple[str, ...]]
    COLUMNS: ClassVar[tuple[str, ...]]  # KEY's first
    VERSION: ClassVar[str] = FIRST
    # statements that bring a file of an earlier layout with entries worth keeping to SCHEMA, in order, each a
    # no-op on a current file (a layout whose old entries are not worth keeping bumps VERSION instead)
    MIGRATIONS: ClassVar[tuple[str, ...]] = ()

    def __init__(self, path: str | Path, held: bool = False):
        self.path = Path(path)
        self._held: duckdb.DuckDBPyConnection | None = None
        self._held_lock = threading.Lock()  # a DuckDB connection is not to be used by two threads at once
        if held:  # open now: the caller learns at once when the file cannot be (duckdb.Error, OSError)
            self.path.parent.mkdir(parents=True, exist_ok=True)
            db = duckdb.connect(str(self.path))
            try:
                self._create(db)
            except BaseException:
                db.close()
                raise
            self._held = db

    def close(self) -> None:
        if self._held is not None:
            self._held.close()
            self._held = None

    def get_many(self, keys: Sequence[tuple], notices: list[str] | None) -> dict[tuple, tuple]:
        """The ``VALUE`` columns of each of ``keys`` the cache holds (a key is the ``KEY`` columns' values)."""
        if self._held is None and not self.path.is_file():  # nothing kept yet (a reader cannot create the file)
            return {}
        where = " AND ".join(f"{column} = ?" for column in self.KEY)
        query = f"SELECT {', '.join(self.VALUE)} FROM {self.TABLE} WHERE {where}"
        try:
            with self._connection(write=False) as db:
                if self._held is None and (marked_version(db) or FIRST) != self.VERSION:
                    return {}  # another version's entries (a held file's are settled as it opens)
                found = {key: db.execute(query, list(key)).fetchone() for key in keys}
        except (duckdb.Error, OSError) as exc:
            self._unavailable(exc, notices)
            return {}
        return {key: row for key, row in found.items() if row is not None}

    def put_many(self, rows: Sequence[tuple], notices: list[str] | None) -> None:
        """Keep ``rows`` (the ``COLUMNS``' values each), replacing what their keys held."""
        if not rows:
            return
        marks = ", ".join("?" for _ in self.COLUMNS)
        statement = f"INSERT OR REPLACE INTO {self.TABLE} ({', '.join(self.COLUMNS)}) VALUES ({marks})"
        try:
            with self._connection(write=True) as db:
                db.executemany(statement, [list(row) for row in rows])
        except (duckdb.Error, OSError) as exc:
            self._unavailable(exc, notices)

    @contextmanager
    def _connection(self, write: bool) -> Iterator[duckdb.DuckDBPyConnection]:
        if self._held is not None:
            with self._held_lock:
                yield self._held
            return
        turns = turns_of(self.path)
        with turns.write() if write else turns.read(), duckdb.connect(str(self.path), read_only=not write) as db:
            if write:
                self._create(db)
            yield db

    def _create(self, db: duckdb.DuckDBPyConnection) -> None:
        """The table, emptied when it holds another version's entries, and the version mark."""
        db.execute(self.SCHEMA)
        for step in self.MIGRATIONS:
            db.execute(step)
        marked = marked_version(db)
        if marked == self.VERSION:
            return
        if (marked or FIRST) != self.VERSION:
            db.execute(f"DROP TABLE {self.TABLE}")
            db.execute(self.SCHEMA)
        db.execute(f"CREATE OR REPLACE TABLE {VERSION_TABLE} (version VARCHAR)")
        db.execute(f"INSERT INTO {VERSION_TABLE} VALUES (?)", [self.VERSION])

    def _unavailable(self, exc: BaseException, notices: list[str] | None) -> None:
        if notices is None:
            raise exc
        said = f"{self.LABEL} {self.path} unavailable"
        if not any(n.startswith(said) for n in notices):  # a read and then a write failing say it once
            notices.append(f"{said} ({one_line(exc, 120)}); {self.LOST}")


def marked_version(db: duckdb.DuckDBPyConnection) -> str | None:
    """The version the cache file ``db`` is marked with; None when it is not (its entries are of ``FIRST``)."""
    marked = db.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name = ? AND database_name = "
                        "current_database()", [VERSION_TABLE]).fetchone()[0]
    row = db.execute(f"SELECT version FROM {VERSION_TABLE}").fetchone() if marked else None
    return None if row is None else row[0]
