"""The catalog's user fields (``convis tag``, ``convis index --metadata``) and the units a ``--where`` keeps.

Fields are keyed by the file's root-relative path, not its row: re-indexing a changed file keeps them.  A value
is stored as the text given and, where it reads as a finite number, as that number too, so ``rating > 3`` compares
numbers.  A field set by ``convis tag`` outranks the metadata file's value for that file: re-reading the file
replaces only what it wrote.
"""

from __future__ import annotations

import math
from typing import Iterable, Mapping

import numpy as np

from retrieval.store.catalog.connection import Connection
from retrieval.store.where import NUMBER, TEXT, Compiled

TAG, FILE = "tag", "file"  # where a field's value came from


def as_number(value: str) -> float | None:
    try:
        number = float(value)
    except ValueError:
        return None
    return number if math.isfinite(number) else None


class FieldRows(Connection):
    def field_kinds(self) -> dict[str, str]:
        """Each user field and its kind: a number where every stored value reads as one, else text."""
        rows = self.db.execute("SELECT key, bool_and(number IS NOT NULL) FROM file_fields GROUP BY key").fetchall()
        return {key: NUMBER if numeric else TEXT for key, numeric in rows}

    def file_fields(self) -> dict[str, dict[str, str]]:
        """path -> field -> value, for every file with a user field."""
        out: dict[str, dict[str, str]] = {}
        rows = self.db.execute("SELECT path, key, value FROM file_fields ORDER BY path, key").fetchall()
        for path, key, value in rows:
            out.setdefault(path, {})[key] = value
        return out

    def tag(self, paths: Iterable[str], values: Mapping[str, str], unset: Iterable[str]) -> None:
        """Set ``values`` and remove the ``unset`` fields of each of ``paths``, in one transaction."""
        paths, unset = list(paths), list(unset)
        rows = [(p, k, v, as_number(v), TAG) for p in paths for k, v in values.items()]
        with self._transaction(bump=False):  # no vector changes: the FAISS indices stay current
            self._dirty = True
            keys = [*values, *unset]
            self.db.execute("DELETE FROM file_fields WHERE path IN (SELECT unnest(?::VARCHAR[])) AND key IN "
                            "(SELECT unnest(?::VARCHAR[]))", [paths, keys])
            if rows:
                self.db.executemany("INSERT INTO file_fields VALUES (?, ?, ?, ?, ?)", rows)

    def replace_file_fields(self, rows: list[tuple[str, str, str]]) -> None:
        """The metadata file's (path, field, value) rows in place of those it wrote before; a tag set on the same
        file and field stays."""
        import pyarrow as pa  # a million rows go in as one table, not a million statements

        table = pa.table({"path": [r[0] for r in rows], "key": [r[1] for r in rows],
                          "value": [r[2] for r in rows], "number": [as_number(r[2]) for r in rows]},
                         schema=pa.schema([("path", pa.string()), ("key", pa.string()), ("value", pa.string()),
                                           ("number", pa.float64())]))
        with self._transaction(bump=False):
            self._dirty = True
            self.db.execute("DELETE FROM file_fields WHERE source = ?", [FILE])
            self.db.register("incoming_fields", table)
            try:
                self.db.execute("INSERT INTO file_fields SELECT i.path, i.key, i.value, i.number, ? FROM "
                                "incoming_fields i WHERE NOT EXISTS (SELECT 1 FROM file_fields t WHERE "
                                "t.path = i.path AND t.key = i.key)", [FILE])
            finally:
                self.db.unregister("incoming_fields")

    def matching_units(self, where: Compiled) -> np.ndarray:
        """The ids of the units of indexed files that ``where`` keeps, sorted."""
        rows = self.db.execute("SELECT u.unit_id FROM units u JOIN files f USING (file_id) "
                               f"WHERE f.status = 'ok' AND ({where.sql}) ORDER BY u.unit_id", where.params).fetchall()
        return np.array([r[0] for r in rows], dtype=np.int64)
