"""FAISS indices derived from the catalog: one per indexer, written atomically."""

from __future__ import annotations

import json
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

import faiss
import numpy as np

# Exact search is fast enough (and exact) until about this many vectors; beyond, an ANN index.
EXACT_LIMIT = 100_000


def choose_factory(count: int, dim: int) -> str:
    """FAISS factory string for a collection of ``count`` vectors (inner product on unit vectors)."""
    if count < EXACT_LIMIT:
        return "Flat"
    return "HNSW32,Flat"


@dataclass
class VectorIndex:
    """A FAISS index whose ids are catalog unit ids, plus what it was built from."""

    index: faiss.Index
    factory: str
    generation: int

    @classmethod
    def build(cls, ids: np.ndarray, matrix: np.ndarray, generation: int, factory: str | None = None) -> "VectorIndex":
        dim = matrix.shape[1] if matrix.ndim == 2 and matrix.shape[0] else 1
        factory = factory or choose_factory(len(ids), dim)
        # IDMap2 keeps vectors retrievable by id, which rescoring candidates needs
        index = faiss.index_factory(dim, f"IDMap2,{factory}", faiss.METRIC_INNER_PRODUCT)
        if len(ids):
            data = np.ascontiguousarray(matrix, dtype=np.float32)
            if not index.is_trained:
                index.train(data)
            index.add_with_ids(data, np.ascontiguousarray(ids, dtype=np.int64))
        return cls(index, factory, generation)

    @property
    def size(self) -> int:
        return int(self.index.ntotal)

    def search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """(scores, ids) of the ``k`` nearest units to each query row; missing slots have id -1."""
        k = max(1, min(k, self.size))
        queries = np.ascontiguousarray(np.atleast_2d(queries), dtype=np.float32)
        return self.index.search(queries, k)

    def vectors(self, ids: np.ndarray) -> np.ndarray:
        return self.index.reconstruct_batch(np.ascontiguousarray(ids, dtype=np.int64))

    # -- persistence --------------------------------------------------------
    def save(self, path: Path) -> None:
        """Write index then sidecar, each to a temp file renamed into place (readers never see half)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        _atomic_write(path, lambda tmp: faiss.write_index(self.index, tmp))
        meta = {"factory": self.factory, "generation": self.generation, "count": self.size}
        _atomic_write(_meta_path(path), lambda tmp: Path(tmp).write_text(json.dumps(meta)))

    @classmethod
    def load(cls, path: Path) -> "VectorIndex | None":
        meta_path = _meta_path(path)
        if not path.is_file() or not meta_path.is_file():
            return None
        try:
            meta = json.loads(meta_path.read_text())
            index = faiss.read_index(str(path))
        except (OSError, ValueError, RuntimeError):
            return None  # unreadable or torn: the caller rebuilds from the catalog
        if index.ntotal != meta.get("count"):
            return None
        return cls(index, meta["factory"], int(meta["generation"]))


def index_path(index_dir: Path, indexer: str) -> Path:
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", indexer).strip("_")
    return index_dir / "faiss" / f"{safe}.faiss"


def _meta_path(path: Path) -> Path:
    return path.with_suffix(".json")


def _atomic_write(path: Path, write) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
