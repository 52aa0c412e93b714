"""Files taken out of the index (``convis remove``): a soft delete.

A removed file's rows (its file row, units and every vector, description signals' included) move in one
transaction into tables of their own (``removed_files``, ``removed_units``, ``removed_embeddings``), which no
search, listing or count reads, and its path is recorded in ``excluded`` with the time, so later runs skip it.
Undoing the removal moves the rows back, ids and bytes unchanged, in one transaction: the file is searchable at
once, with nothing decoded or embedded.  Descriptions are keyed by a file's bytes, not its rows: they stay where
they are either way.  A path removed before rows were kept (an older catalog) has none to move back: the next
run indexes it again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from retrieval.store.catalog.files import FileRows

# each kept table beside the table whose rows it keeps, and the column a file's rows are found by
KEPT = (("files", "removed_files"), ("units", "removed_units"), ("embeddings", "removed_embeddings"))
FILE_IDS = "SELECT file_id FROM {files} WHERE path IN (SELECT unnest(?::VARCHAR[]))"
UNIT_IDS = f"SELECT unit_id FROM {{units}} WHERE file_id IN ({FILE_IDS})"


@dataclass(frozen=True)
class RemovedFile:
    """A file taken out of the index: when, and whether its vectors are kept (an undo restores them at once)."""

    path: str
    removed_at: str  # ISO 8601, the catalog's clock
    kept: bool  # its rows and vectors are kept; False: removed before they were, the next run re-embeds it
    units: int  # units kept with it
    status: str | None  # ok or failed, as it was when removed (None: nothing kept)


@dataclass(frozen=True)
class Undone:
    """What an undo did: files whose kept rows are back (searchable now), and files the next run indexes."""

    restored: list[str]
    to_index: list[str]


class RemovedRows(FileRows):
    def exclude(self, paths: Iterable[str]) -> int:
        """Take ``paths`` out of the index (rows and vectors kept aside) and record them excluded, in one
        transaction; how many were not excluded before."""
        paths = sorted(set(paths))
        if not paths:
            return 0
        before = set(self.excluded())
        with self._transaction():
            self._move(paths, to_kept=True)
            # not ON CONFLICT: DuckDB names an upsert's incoming row "excluded" too, and refuses the clash
            self.db.execute("INSERT INTO excluded (path) SELECT p FROM unnest(?::VARCHAR[]) t(p) "
                            "WHERE p NOT IN (SELECT path FROM excluded)", [paths])
        return len(set(paths) - before)

    def restore(self, paths: Iterable[str]) -> Undone:
        """Undo ``exclude`` for those of ``paths`` that are excluded: kept rows move back (vectors as they were),
        the rest are left to the next run; one transaction."""
        wanted = sorted(set(paths) & set(self.excluded()))
        if not wanted:
            return Undone([], [])
        kept = sorted(set(wanted) & set(self._kept_paths()))
        with self._transaction(bump=bool(kept)):  # no vector changes unless rows come back
            self._dirty = True
            if kept:
                self._delete_paths(kept)  # the path's rows are the kept ones: never two files of one path
                self._move(kept, to_kept=False)
            self.db.execute("DELETE FROM excluded WHERE path IN (SELECT unnest(?::VARCHAR[]))", [wanted])
        return Undone(kept, [p for p in wanted if p not in kept])

    def excluded(self) -> list[str]:
        """The paths runs skip, sorted."""
        return [r[0] for r in self.db.execute("SELECT path FROM excluded ORDER BY path").fetchall()]

    def removed_files(self) -> list[RemovedFile]:
        """Every file taken out of the index, by path, with when and what of it is kept."""
        rows = self.db.execute(
            """SELECT x.path, x.excluded_at, f.file_id IS NOT NULL, count(u.unit_id), any_value(f.status)
               FROM excluded x LEFT JOIN removed_files f USING (path) LEFT JOIN removed_units u USING (file_id)
               GROUP BY x.path, x.excluded_at, f.file_id ORDER BY x.path""")
        return [RemovedFile(path, when.isoformat(timespec="seconds") if when else "", bool(kept), int(units),
                            status) for path, when, kept, units, status in rows.fetchall()]

    def _kept_paths(self) -> list[str]:
        return [r[0] for r in self.db.execute("SELECT path FROM removed_files").fetchall()]

    def _move(self, paths: list[str], to_kept: bool) -> None:
        """Move the rows of ``paths`` between the index's tables and the kept ones (inside a transaction)."""
        pairs = [(main, kept) if to_kept else (kept, main) for main, kept in KEPT]
        if to_kept:
            self._delete_rows([kept for _, kept in KEPT], paths)  # kept by an earlier removal: the current rows win
        (files, _), (units, _), _ = pairs
        where = ["path IN (SELECT unnest(?::VARCHAR[]))", f"file_id IN ({FILE_IDS.format(files=files)})",
                 f"unit_id IN ({UNIT_IDS.format(units=units, files=files)})"]
        for (source, dest), rows in zip(pairs, where, strict=True):
            columns = self._shared_columns(source, dest)
            self.db.execute(f"INSERT INTO {dest} ({columns}) SELECT {columns} FROM {source} WHERE {rows}", [paths])
        self._delete_rows([source for source, _ in pairs], paths)

    def _delete_rows(self, tables: list[str], paths: list[str]) -> None:
        """Delete the rows of ``paths`` from ``tables`` (files, units, vectors): vectors and units first, found
        through the file rows."""
        files, units, embeddings = tables
        self.db.execute(f"DELETE FROM {embeddings} WHERE unit_id IN ({UNIT_IDS.format(units=units, files=files)})",
                        [paths])
        self.db.execute(f"DELETE FROM {units} WHERE file_id IN ({FILE_IDS.format(files=files)})", [paths])
        self.db.execute(f"DELETE FROM {files} WHERE path IN (SELECT unnest(?::VARCHAR[]))", [paths])

    def _shared_columns(self, source: str, dest: str) -> str:
        """The columns ``source`` and ``dest`` share, after giving a kept table the columns its index table gained
        since it was made (a row keeps every value it had)."""
        found = self.db.execute("SELECT table_name, column_name, data_type FROM information_schema.columns "
                                "WHERE table_name IN (?, ?) ORDER BY ordinal_position", [source, dest]).fetchall()
        have = {table: [(name, kind) for t, name, kind in found if t == table] for table in (source, dest)}
        dest_names = {name for name, _ in have[dest]}
        for name, kind in have[source]:
            if name not in dest_names and dest.startswith("removed_"):
                self.db.execute(f'ALTER TABLE {dest} ADD COLUMN "{name}" {kind}')
                dest_names.add(name)
        return ", ".join(f'"{name}"' for name, _ in have[source] if name in dest_names)
