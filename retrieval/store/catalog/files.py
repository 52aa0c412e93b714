"""The catalog's files: each one's rows written or failed in one transaction, or forgotten (taking a file out of
the index while keeping its rows: ``catalog_removed``)."""

from __future__ import annotations

from typing import Iterable, Sequence

import numpy as np

from retrieval.store.catalog.connection import Connection
from retrieval.store.catalog.records import FileRecord, FileState, UnitRecord


class FileRows(Connection):
    def file_states(self) -> dict[str, FileState]:
        rows = self.db.execute("SELECT f.path, f.file_id, f.size, f.mtime, f.content_hash, f.status, f.error, "
                               "coalesce(f.transient, false), coalesce(f.unavailable, false), f.stat_key "
                               "FROM files f").fetchall()
        return {r[0]: FileState(*r[1:]) for r in rows}

    def indexed_with(self, indexer: str) -> set[str]:
        """Paths whose every unit has a vector from ``indexer``."""
        rows = self.db.execute(
            """SELECT f.path FROM files f JOIN units u USING (file_id)
               LEFT JOIN embeddings e ON e.unit_id = u.unit_id AND e.indexer = ?
               WHERE f.status = 'ok' GROUP BY f.path HAVING count(e.unit_id) = count(*)""",
            [indexer],
        ).fetchall()
        return {r[0] for r in rows}

    def commit_file(self, record: FileRecord, units: Sequence[UnitRecord],
                    vectors: dict[str, np.ndarray]) -> None:
        """Replace one file's rows and vectors atomically. ``vectors[indexer]`` is (len(units), dim)."""
        with self._transaction():
            self._delete_paths([record.path])
            file_id = self._insert_file(record, "ok", record.note or None)
            for i, unit in enumerate(units):
                unit_id = self.db.execute("SELECT nextval('unit_ids')").fetchone()[0]
                self.db.execute(
                    "INSERT INTO units (unit_id, file_id, segment, start_s, end_s, frame_times, boundary, confidence) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    [unit_id, file_id, unit.segment, unit.start, unit.end, list(unit.frame_times), unit.boundary,
                     unit.confidence],
                )
                for indexer, matrix in vectors.items():
                    vec = np.ascontiguousarray(matrix[i], dtype=np.float32).tobytes()
                    self.db.execute("INSERT INTO embeddings (unit_id, indexer, vector) VALUES (?, ?, ?)",
                                    [unit_id, indexer, vec])

    def add_vectors(self, path: str, vectors: dict[str, np.ndarray]) -> None:
        """Add another indexer's vectors to an already indexed file (same units, same order)."""
        with self._transaction():
            unit_ids = [r[0] for r in self.db.execute(
                "SELECT unit_id FROM units JOIN files USING (file_id) WHERE path = ? ORDER BY segment", [path]
            ).fetchall()]
            for indexer, matrix in vectors.items():
                self.db.execute(
                    "DELETE FROM embeddings WHERE indexer = ? AND unit_id IN (SELECT unnest(?::BIGINT[]))",
                    [indexer, unit_ids],
                )
                for unit_id, row in zip(unit_ids, matrix, strict=False):
                    vec = np.ascontiguousarray(row, dtype=np.float32).tobytes()
                    self.db.execute("INSERT INTO embeddings (unit_id, indexer, vector) VALUES (?, ?, ?)",
                                    [unit_id, indexer, vec])

    def record_failure(self, path: str, size: int, mtime: float, error: str, transient: bool = False) -> None:
        """``transient``: the cause may pass (a timeout, a crash, a full disk), so a later run tries the file again."""
        with self._transaction():
            self._delete_paths([path])
            self._insert_file(FileRecord(path, size, mtime, "", 0, 0, 0, 0, 0, ""), "failed", error, transient)

    def touch(self, path: str, size: int, mtime: float, stat_key: str = "") -> None:
        """A file whose bytes did not change but whose mtime or stat key did: keep its vectors."""
        self._dirty = True
        self.db.execute("UPDATE files SET size = ?, mtime = ?, stat_key = coalesce(?, stat_key) WHERE path = ?",
                        [size, mtime, stat_key or None, path])

    def forget(self, paths: Iterable[str]) -> int:
        paths = list(paths)
        if not paths:
            return 0
        with self._transaction():
            self._delete_paths(paths)
        return len(paths)

    def _insert_file(self, r: FileRecord, status: str, error: str | None, transient: bool = False) -> int:
        file_id = self.db.execute("SELECT nextval('file_ids')").fetchone()[0]
        self.db.execute(
            "INSERT INTO files (file_id, path, size, mtime, content_hash, duration, fps, width, height, frame_count, "
            f"decoder, status, error, transient, units_by, codec, stat_key) VALUES ({', '.join('?' * 17)})",
            [file_id, r.path, r.size, r.mtime, r.content_hash or None, r.duration, r.fps, r.width,
             r.height, r.frame_count, r.decoder or None, status, error, transient, r.units_by or None,
             r.codec or None, r.stat_key or None],
        )
        return file_id

    def _delete_paths(self, paths: list[str]) -> None:
        ids = "SELECT file_id FROM files WHERE path IN (SELECT unnest(?::VARCHAR[]))"
        units = f"SELECT unit_id FROM units WHERE file_id IN ({ids})"
        self.db.execute(f"DELETE FROM embeddings WHERE unit_id IN ({units})", [paths])
        self.db.execute(f"DELETE FROM units WHERE file_id IN ({ids})", [paths])
        self.db.execute("DELETE FROM files WHERE path IN (SELECT unnest(?::VARCHAR[]))", [paths])

    def file_fps(self, path: str) -> float | None:
        """The frame rate an indexed file was decoded at (None: not indexed)."""
        row = self.db.execute("SELECT fps FROM files WHERE path = ? AND status = 'ok'", [path]).fetchone()
        return float(row[0]) if row and row[0] else None

    def files_by_hash(self, content_hash: str) -> list[str]:
        rows = self.db.execute(
            "SELECT path FROM files WHERE content_hash = ? AND status = 'ok'", [content_hash]
        ).fetchall()
        return [r[0] for r in rows]

    def summary(self) -> dict:
        """Counts of files (an unavailable file counts as that, whatever its status), units and vectors."""
        files = dict(self.db.execute("SELECT CASE WHEN coalesce(f.unavailable, false) THEN 'unavailable' "
                                     "ELSE f.status END, count(*) FROM files f GROUP BY 1").fetchall())
        units = self.db.execute("SELECT count(*) FROM units").fetchone()[0]
        per_indexer = dict(self.db.execute("SELECT indexer, count(*) FROM embeddings GROUP BY indexer").fetchall())
        failures = self.db.execute(
            "SELECT path, error FROM files WHERE status = 'failed' ORDER BY path"
        ).fetchall()
        return {
            "files_ok": files.get("ok", 0),
            "files_failed": files.get("failed", 0),
            "files_unavailable": files.get("unavailable", 0),
            # taken out of the index (`convis remove`): counted here only, never among the files, units or vectors
            "files_removed": self.db.execute("SELECT count(*) FROM excluded").fetchone()[0],
            "units": units,
            "vectors": per_indexer,
            "failures": [{"path": p, "error": e} for p, e in failures],
            "segment_seconds": self.setting("segment_seconds"),
            "generation": self.generation,
        }
