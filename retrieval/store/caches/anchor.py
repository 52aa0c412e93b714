"""The anchor cache: vectors of anchors the catalog does not hold (a time window, a file not indexed), so that
the same anchor is decoded and embedded once.

A vector is keyed by what made it: the file's bytes (content hash), its span, the indexer's model id and the
files of its weights, the index's protocol and the device asked for.  It lives in a DuckDB file of its own
beside the index (a side cache: ``retrieval.store.caches.base``), opened only for each read or write, so that a
running server and the command line share it; a file that cannot be opened (another process is writing it, it is
damaged) costs a notice and a fresh embedding, never the query.  A memory layer in front answers repeated anchors
of one process.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from retrieval.core.revisions import weights_revision
from retrieval.store.caches.base import SideCache, digest

ANCHORS_NAME = "anchors.duckdb"
# the cache's version, part of every key too: changing how an anchor is decoded or embedded bumps it, so older
# vectors are never read
FORMAT = "1"


@dataclass(frozen=True)
class AnchorKey:
    """What an anchor's vector is made from; ``digest`` names it in the cache."""

    content_hash: str
    span: str  # "whole", else "start-end" in seconds (end "" for the end of the file)
    model_id: str
    protocol: str
    device: str  # as asked ("auto": the GPU when there is one): GPU vectors are fp16
    weights: str  # the weights' files, when the model id alone does not tell them apart

    @classmethod
    def of(cls, content_hash: str, start: float | None, end: float | None, model_id: str, protocol: str,
           device: str | None) -> AnchorKey:
        return cls(content_hash, span_of(start, end), model_id, protocol, device or "auto", weights_stamp(model_id))

    @property
    def digest(self) -> str:
        return digest(FORMAT, self.content_hash, self.span, self.model_id, self.protocol, self.device, self.weights)


def span_of(start: float | None, end: float | None) -> str:
    """An anchor's span as a key: "whole" for a file decoded as one unit (not as a span from 0), else
    "start-end" in seconds (end "" for the end of the file)."""
    if start is None and end is None:
        return "whole"
    return f"{float(start or 0.0)!r}-{'' if end is None else repr(float(end))}"


def weights_stamp(model_id: str) -> str:
    """What tells the weights behind ``model_id`` apart when its name stays ("" when it cannot be told)."""
    family, _, source = model_id.partition(":")
    return weights_revision(source, family) or ""


class AnchorCache(SideCache):
    LABEL, LOST = "anchor cache", "the anchor is embedded anew"
    TABLE, VERSION = "anchors", FORMAT
    SCHEMA = """CREATE TABLE IF NOT EXISTS anchors (
        key VARCHAR PRIMARY KEY, content_hash VARCHAR, span VARCHAR, model VARCHAR, protocol VARCHAR,
        dtype VARCHAR, vector BLOB, created TIMESTAMP DEFAULT current_timestamp)"""
    KEY, VALUE = ("key",), ("dtype", "vector")
    COLUMNS = ("key", "content_hash", "span", "model", "protocol", "dtype", "vector")

    def __init__(self, path: str | Path, memory: int = 1024):
        super().__init__(path)
        self.memory_size = memory  # vectors kept in memory, the least recently used out first
        self._memory: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: AnchorKey, notices: list[str]) -> np.ndarray | None:
        """The vector ``key`` names (a copy: callers may change it), or None."""
        with self._lock:
            vector = self._memory.get(key.digest)
            if vector is not None:
                self._memory.move_to_end(key.digest)
                return vector.copy()
        row = self.get_many([(key.digest,)], notices).get((key.digest,))
        if row is None:
            return None
        vector = np.frombuffer(row[1], dtype=np.dtype(row[0])).copy()
        self._remember(key, vector)
        return vector

    def put(self, key: AnchorKey, vector: np.ndarray, notices: list[str]) -> None:
        self._remember(key, vector)
        self.put_many([(key.digest, key.content_hash, key.span, key.model_id, key.protocol, vector.dtype.str,
                        vector.tobytes())], notices)

    def _remember(self, key: AnchorKey, vector: np.ndarray) -> None:
        with self._lock:
            self._memory[key.digest] = vector.copy()
            self._memory.move_to_end(key.digest)
            while len(self._memory) > self.memory_size:
                self._memory.popitem(last=False)
