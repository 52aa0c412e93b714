"""The catalog's user fields (``convis tag``, ``convis index --metadata``) and the units a ``--where`` keeps.

Fields are keyed by the file's root-relative path, not its row: re-indexing a changed file keeps them.  A value
is stored as the text given and, where it reads as a finite number, as that number too, so ``rating > 3`` compares
numbers.  A field set by ``convis tag`` outranks the metadata file's value for that file: re-reading the file
replaces only what it wrote.  A file holds at most ``MAX_FIELDS_PER_FILE`` fields and an index at most
``MAX_FIELD_NAMES`` names: ``/fields``, ``convis ls`` and each filter's lookup stay small whatever a file gives.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Iterable, Mapping

import numpy as np

from retrieval.core.errors import ConvisError
from retrieval.store.catalog.bulk import all_storable, registered
from retrieval.store.catalog.connection import Connection
from retrieval.store.where import MIXED, NUMBER, TEXT, Compiled, as_number

TAG, FILE = "tag", "file"  # where a field's value came from
MAX_FIELDS_PER_FILE = 64  # a row of 200,000 keys is a mistake, not metadata
MAX_FIELD_NAMES = 256  # distinct names in one index: each is listed by /fields and by an unknown field's error
OVER_FILE = f"fields beyond the {MAX_FIELDS_PER_FILE} a file holds: skipped"
OVER_INDEX = f"fields of names beyond the {MAX_FIELD_NAMES} an index holds: skipped"
UNSTORABLE = "fields that are not valid Unicode (a lone surrogate): skipped"


class FieldLimitError(ConvisError, ValueError):
    """A tag that would give a file more than ``MAX_FIELDS_PER_FILE`` fields or the index more than
    ``MAX_FIELD_NAMES`` names."""

    exit_code, http_status = 2, 400


class FieldRows(Connection):
    def field_counts(self) -> dict[str, tuple[int, int]]:
        """Each user field: how many files hold it, and how many of those hold a value that is not a number."""
        rows = self.db.execute("SELECT key, count(*), count(*) FILTER (WHERE number IS NULL) FROM file_fields "
                               "GROUP BY key").fetchall()
        return {key: (files, texts) for key, files, texts in rows}

    def field_kinds(self) -> dict[str, str]:
        """Each user field and its kind: a number where every stored value reads as one, text where none does,
        mixed otherwise (``where`` compares numbers as numbers there, and the rest as text)."""
        return {key: NUMBER if not texts else TEXT if texts == files else MIXED
                for key, (files, texts) in self.field_counts().items()}

    def file_fields(self) -> dict[str, dict[str, str]]:
        """path -> field -> value, for every file with a user field."""
        out: dict[str, dict[str, str]] = {}
        rows = self.db.execute("SELECT path, key, value FROM file_fields ORDER BY path, key").fetchall()
        for path, key, value in rows:
            out.setdefault(path, {})[key] = value
        return out

    def tag(self, paths: Iterable[str], values: Mapping[str, str], unset: Iterable[str]) -> None:
        """Set ``values`` and remove the ``unset`` fields of each of ``paths``, in one transaction (or
        FieldLimitError, and nothing changes, where the caps would be passed)."""
        paths, unset = list(paths), list(unset)
        rows = [(p, k, v, as_number(v), TAG) for p in paths for k, v in values.items()]
        with self._transaction(bump=False):  # no vector changes: the FAISS indices stay current
            self._dirty = True
            keys = [*values, *unset]
            self.db.execute("DELETE FROM file_fields WHERE path IN (SELECT unnest(?::VARCHAR[])) AND key IN "
                            "(SELECT unnest(?::VARCHAR[]))", [paths, keys])
            self._check_room(paths, list(values))
            if rows:
                self.db.executemany("INSERT INTO file_fields VALUES (?, ?, ?, ?, ?)", rows)

    def _check_room(self, paths: list[str], keys: list[str]) -> None:
        """FieldLimitError where ``keys`` added to each of ``paths`` (their old values deleted) pass a cap."""
        names = {r[0] for r in self.db.execute("SELECT DISTINCT key FROM file_fields").fetchall()}
        if len(names | set(keys)) > MAX_FIELD_NAMES:
            raise FieldLimitError(f"--set: an index holds at most {MAX_FIELD_NAMES} field names and this one has "
                                  f"{len(names)}: use a name it has (GET /fields lists them) or --unset some")
        held = dict(self.db.execute("SELECT path, count(*) FROM file_fields WHERE path IN "
                                    "(SELECT unnest(?::VARCHAR[])) GROUP BY path", [paths]).fetchall())
        full = sorted(path for path in paths if held.get(path, 0) + len(keys) > MAX_FIELDS_PER_FILE)
        if full:
            raise FieldLimitError(f"--set: a file holds at most {MAX_FIELDS_PER_FILE} fields, and {full[0]} would "
                                  f"hold more{f' (and {len(full) - 1} other file(s))' if len(full) > 1 else ''}: "
                                  "--unset some first")

    def replace_file_fields(self, rows: list[tuple[str, str, str]]) -> Counter:
        """The metadata file's (path, field, value) rows in place of those it wrote before; a tag set on the same
        file and field stays.  Rows past the caps or that cannot be stored are left out, each alone: their
        count by reason."""
        import pyarrow as pa  # a million rows go in as one table, not a million statements

        with self._transaction(bump=False):
            self._dirty = True
            self.db.execute("DELETE FROM file_fields WHERE source = ?", [FILE])
            rows, skipped = self._within_caps(rows)
            table = pa.table({"path": [r[0] for r in rows], "key": [r[1] for r in rows],
                              "value": [r[2] for r in rows], "number": [as_number(r[2]) for r in rows]},
                             schema=pa.schema([("path", pa.string()), ("key", pa.string()),
                                               ("value", pa.string()), ("number", pa.float64())]))
            with registered(self.db, "incoming_fields", table):
                self.db.execute("INSERT INTO file_fields SELECT i.path, i.key, i.value, i.number, ? FROM "
                                "incoming_fields i WHERE NOT EXISTS (SELECT 1 FROM file_fields t WHERE "
                                "t.path = i.path AND t.key = i.key)", [FILE])
        return skipped

    def _within_caps(self, rows: list[tuple[str, str, str]]) -> tuple[list[tuple[str, str, str]], Counter]:
        """The rows that fit beside the tags (which come first), in the order given, and the count of the rest."""
        held: dict[str, set[str]] = defaultdict(set)
        for path, key in self.db.execute("SELECT path, key FROM file_fields WHERE source = ?", [TAG]).fetchall():
            held[path].add(key)
        names = {key for keys in held.values() for key in keys}
        kept, skipped = [], Counter()
        for row in rows:
            path, key, value = row
            keys = held[path]
            if key in keys:  # a tag outranks it: left to the insert, which keeps the tag
                kept.append(row)
            elif not all_storable(path, key, value):
                skipped[UNSTORABLE] += 1
            elif len(keys) >= MAX_FIELDS_PER_FILE:
                skipped[OVER_FILE] += 1
            elif key not in names and len(names) >= MAX_FIELD_NAMES:
                skipped[OVER_INDEX] += 1
            else:
                keys.add(key)
                names.add(key)
                kept.append(row)
        return kept, skipped

    def matching_units(self, where: Compiled) -> np.ndarray:
        """The ids of the units of indexed files that ``where`` keeps, sorted."""
        rows = self.db.execute("SELECT u.unit_id FROM units u JOIN files f USING (file_id) "
                               f"WHERE f.status = 'ok' AND ({where.sql}) ORDER BY u.unit_id", where.params).fetchall()
        return np.array([r[0] for r in rows], dtype=np.int64)
