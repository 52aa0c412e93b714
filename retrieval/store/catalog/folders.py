"""Where the catalog's files live: the device each folder of indexed files was on when a run last found files in
it, and which files are unavailable (their folder missing or on another device: a share that is not mounted).

An unavailable file keeps its rows and vectors; recall leaves it out (``VectorRows``) until a run finds it again.
"""

from __future__ import annotations

from typing import Iterable

from retrieval.store.catalog.connection import Connection


class FolderRows(Connection):
    def folder_devices(self) -> dict[str, int]:
        """Folder (root-relative, "" for the root) -> the ``st_dev`` it had when a run last found files in it."""
        return {path: int(device) for path, device in self.db.execute("SELECT path, device FROM folders").fetchall()}

    def record_folder_devices(self, devices: dict[str, int]) -> None:
        """Record these folders' devices (only those that changed are written)."""
        known = self.folder_devices()
        changed = [[path, int(device)] for path, device in sorted(devices.items()) if known.get(path) != device]
        if not changed:
            return
        self._dirty = True
        self.db.executemany("INSERT OR REPLACE INTO folders VALUES (?, ?)", changed)

    def forget_folder_devices(self) -> None:
        """Drop every recorded device: they were the devices of another root's folders."""
        if self.folder_devices():
            self._dirty = True
            self.db.execute("DELETE FROM folders")

    def unavailable(self) -> list[str]:
        """The files whose folder was offline at the last run, sorted (kept with their vectors)."""
        return [r[0] for r in self.db.execute("SELECT f.path FROM files f WHERE coalesce(f.unavailable, false) "
                                              "ORDER BY f.path").fetchall()]

    def set_unavailable(self, paths: Iterable[str]) -> bool:
        """Mark exactly ``paths`` unavailable (every other file available), in one transaction that changes what
        recall searches; whether anything changed."""
        wanted = sorted(set(paths))
        if wanted == self.unavailable():
            return False
        with self._transaction():
            self.db.execute("UPDATE files SET unavailable = list_contains(?::VARCHAR[], path)", [wanted])
        return True


def available_only(catalog: Connection, unit: str) -> str:
    """A SQL condition that the unit id ``unit`` (a column) is not of an unavailable file."""
    return f"{unit} NOT IN (SELECT u.unit_id FROM units u JOIN files f USING (file_id) WHERE f.unavailable)"
