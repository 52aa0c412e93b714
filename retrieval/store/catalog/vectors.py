"""The catalog's vectors: the indexers and description signals that make them, and each unit's vector of
each signal (the FAISS indices are derived from these)."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from retrieval.store.catalog.connection import Connection
from retrieval.store.catalog.folders import available_only
from retrieval.store.catalog.records import DescriptionSignal, IndexerRow


class VectorRows(Connection):
    # -- indexers -----------------------------------------------------------
    def register_indexer(self, row: IndexerRow) -> None:
        self._dirty = True
        self.db.execute(
            "INSERT INTO indexers VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (indexer) DO UPDATE SET "
            "dim = excluded.dim, frames = excluded.frames",
            [row.indexer, row.name, row.source, row.kind, row.dim, row.frames, row.faiss_factory],
        )

    def set_faiss_factory(self, indexer: str, factory: str) -> None:
        self._dirty = True
        self.db.execute("UPDATE indexers SET faiss_factory = ? WHERE indexer = ?", [factory, indexer])
        self.db.execute("UPDATE description_signals SET faiss_factory = ? WHERE signal = ?", [factory, indexer])

    def indexers(self) -> list[IndexerRow]:
        rows = self.db.execute("SELECT * FROM indexers ORDER BY indexer").fetchall()
        return [IndexerRow(*r) for r in rows]

    def register_description_signal(self, row: DescriptionSignal) -> None:
        self._dirty = True
        self.db.execute(
            "INSERT INTO description_signals VALUES (?, ?, ?, ?, ?) ON CONFLICT (signal) DO UPDATE SET "
            "dim = excluded.dim", [row.signal, row.indexer, row.concept, row.dim, row.faiss_factory])

    def description_signals(self) -> list[DescriptionSignal]:
        """Every concept's description signal."""
        rows = self.db.execute("SELECT * FROM description_signals ORDER BY signal").fetchall()
        return [DescriptionSignal(*r) for r in rows]

    def vector_sources(self, indexer: str) -> dict[int, str | None]:
        """unit id -> what each of ``indexer``'s vectors was made from (a digest of its text), for derived vectors
        that are kept in step with their source."""
        rows = self.db.execute("SELECT unit_id, source FROM embeddings WHERE indexer = ?", [indexer]).fetchall()
        return {int(u): s for u, s in rows}

    def put_unit_vectors(self, indexer: str, vectors: dict[int, tuple[np.ndarray, str]],
                         drop: Sequence[int] = ()) -> None:
        """Set ``indexer``'s vectors of some units (unit id -> (vector, source)) and remove those of ``drop``,
        in one transaction."""
        with self._transaction():
            gone = [*map(int, drop), *map(int, vectors)]
            self.db.execute("DELETE FROM embeddings WHERE indexer = ? AND unit_id IN (SELECT unnest(?::BIGINT[]))",
                            [indexer, gone])
            for unit_id, (vector, source) in vectors.items():
                vec = np.ascontiguousarray(vector, dtype=np.float32).tobytes()
                self.db.execute("INSERT INTO embeddings (unit_id, indexer, vector, source) VALUES (?, ?, ?, ?)",
                                [int(unit_id), indexer, vec, source])

    # -- reads --------------------------------------------------------------
    def vectors(self, indexer: str) -> tuple[np.ndarray, np.ndarray]:
        """(unit_ids int64, matrix float32) of every vector from ``indexer`` that recall searches: those of
        unavailable files are kept, not searched."""
        rows = self.db.execute(
            f"SELECT unit_id, vector FROM embeddings WHERE indexer = ? AND {available_only(self, 'unit_id')} "
            "ORDER BY unit_id", [indexer]
        ).fetchall()
        if not rows:
            # an indexer with no vectors yet still has its width: queries must fit the empty index
            dim = self.db.execute("SELECT dim FROM indexers WHERE indexer = ?", [indexer]).fetchone() or \
                self.db.execute("SELECT dim FROM description_signals WHERE signal = ?", [indexer]).fetchone()
            return np.zeros(0, np.int64), np.zeros((0, dim[0] if dim else 0), np.float32)
        ids = np.array([r[0] for r in rows], dtype=np.int64)
        matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(len(rows), -1)
        return ids, matrix.copy()

    def vectors_of(self, indexer: str, unit_ids: Sequence[int]) -> dict[int, np.ndarray]:
        """The stored vectors from ``indexer`` of ``unit_ids`` (those that have one): the exact values scores use."""
        rows = self.db.execute(
            "SELECT unit_id, vector FROM embeddings WHERE indexer = ? AND unit_id IN (SELECT unnest(?::BIGINT[]))",
            [indexer, [int(u) for u in unit_ids]],
        ).fetchall()
        return {int(u): np.frombuffer(v, dtype=np.float32) for u, v in rows}

    def vector_count_both(self, first: str, second: str) -> int:
        """How many units recall searches have a vector from both signals (a signal composed of the two has that
        many)."""
        return self.db.execute("SELECT count(*) FROM embeddings a JOIN embeddings b USING (unit_id) "
                               f"WHERE a.indexer = ? AND b.indexer = ? AND {available_only(self, 'unit_id')}",
                               [first, second]).fetchone()[0]

    def vector_count(self, indexer: str) -> int:
        """How many vectors from ``indexer`` recall searches (``vectors``' rows)."""
        return self.db.execute(f"SELECT count(*) FROM embeddings WHERE indexer = ? AND "
                               f"{available_only(self, 'unit_id')}", [indexer]).fetchone()[0]

    def unit_vectors(self, path: str, indexer: str) -> np.ndarray:
        rows = self.db.execute(
            """SELECT e.vector FROM embeddings e JOIN units u USING (unit_id) JOIN files f USING (file_id)
               WHERE f.path = ? AND e.indexer = ? ORDER BY u.segment""",
            [path, indexer],
        ).fetchall()
        if not rows:
            return np.zeros((0, 0), np.float32)
        return np.frombuffer(b"".join(r[0] for r in rows), dtype=np.float32).reshape(len(rows), -1).copy()
