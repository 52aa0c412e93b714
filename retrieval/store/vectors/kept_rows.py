"""A filter's kept rows gathered once into a half-precision matrix, kept for the filter's later queries.

A filter keeping 10% of a 100k x 768 index reads 30 MB of float32 rows a query, scattered over the index: about 2.5
times the bytes an unfiltered IVF search reads (its nprobe lists), and 5x to 10x its time on a busy machine.  The
same rows gathered into one contiguous float16 matrix are half the bytes and one sequential scan (FAISS's
``IndexScalarQuantizer`` with ``QT_fp16``): about the unfiltered IVF search's time while the matrix stays in cache,
about twice its CPU time when other processes evict it.  The half-precision scores
propose candidates; ``filtered_search`` rescores them from the index's own float32 vectors and keeps the result
only when the bound ``error`` proves that no row left out could have ranked higher.

Gathering costs tens of milliseconds (a 10% filter of 100k x 768), more than one filtered query, so a filter is
gathered when a batch of queries asks for it or when it comes back: a web app's filter bar or a request's
several indexers send the same filter again and again; one command-line query does not.  The cache is per
process, keyed by the index's identity and the kept rows' digest, and holds at most ``CACHE_BYTES``.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Callable

import faiss
import numpy as np

CACHE_BYTES = 512 << 20  # half-precision rows kept across filters (a 50% filter of 1M x 768 vectors: 768 MB, not kept)
REMEMBERED = 64  # filters seen once, remembered so that their second query gathers
GATHER_CHUNK = 16_384  # rows read from the index at a time: never a float32 copy of all the kept rows
# float32 sums of d products of unit-scale numbers are off by at most about d * 2^-24 of |q| |x|; the bound allows
# ten times that for FAISS's and numpy's different summation orders
SUM_SLACK = 10 * 2.0 ** -24
HALF_ROUNDING = 2.0 ** -11  # float16's unit roundoff (11-bit significand)


@dataclass(frozen=True)
class Gathered:
    """The kept ``rows`` (row numbers in the index), in this order, as a float16 FAISS index."""

    rows: np.ndarray
    index: faiss.IndexScalarQuantizer
    error: float  # the largest |x - half(x)| of any row: |q.x - q.half(x)| <= |q| error
    norm: float  # the largest |x| of any row

    def bound(self, query_norms: np.ndarray) -> np.ndarray:
        """How far each query's half-precision score of any kept row may be from its float32 score."""
        return query_norms * (self.error + SUM_SLACK * self.index.d * self.norm)


class Cache:
    """Gathered filters by (index key, digest of kept rows), least recently used dropped first."""

    def __init__(self, limit: int = CACHE_BYTES):
        self.limit = limit
        self._held: OrderedDict[tuple, Gathered] = OrderedDict()
        self._seen: OrderedDict[tuple, None] = OrderedDict()
        self._lock = threading.Lock()

    def clear(self) -> None:
        """Forget every filter (a benchmark's runs each meet their filters for the first time)."""
        with self._lock:
            self._held.clear()
            self._seen.clear()

    def get(self, index_key: str, rows: np.ndarray, dim: int, queries: int, gather_from: int,
            read: Callable[[np.ndarray], np.ndarray]) -> Gathered | None:
        """The gathered ``rows`` (``read``: their float32 vectors of ``dim`` numbers); None while gathering would
        not pay: a filter first seen by fewer than ``gather_from`` queries, or one larger than the whole cache."""
        key = (index_key, len(rows), hashlib.blake2b(rows.tobytes(), digest_size=16).digest())
        with self._lock:
            if key in self._held:
                self._held.move_to_end(key)
                return self._held[key]
            if rows.size * 2 * dim > self.limit:
                return None
            if queries < gather_from and key not in self._seen:
                self._seen[key] = None
                while len(self._seen) > REMEMBERED:
                    self._seen.popitem(last=False)
                return None
        made = gather(rows, read)  # outside the lock: another filter's queries need not wait
        with self._lock:
            self._held[key] = made
            self._seen.pop(key, None)
            while sum(_bytes(g) for g in self._held.values()) > self.limit:
                self._held.popitem(last=False)
        return made


def gather(rows: np.ndarray, read: Callable[[np.ndarray], np.ndarray]) -> Gathered:
    """``rows``' vectors in half precision, with the bound on their rounding error: rounding to nearest moves
    each number by at most 2^-11 of itself (``HALF_ROUNDING``), or 2^-25 below the smallest normal half, so
    |x - half(x)| <= 2^-11 |x| + 2^-25 sqrt(d); a number beyond the largest half (inf) makes the bound inf."""
    half = np.empty((len(rows), read(rows[:1]).shape[1]), np.float16)
    norm = 0.0
    for start in range(0, len(rows), GATHER_CHUNK):
        exact = np.ascontiguousarray(read(rows[start:start + GATHER_CHUNK]), dtype=np.float32)
        with np.errstate(over="ignore"):  # beyond the largest half: inf, which makes the bound inf
            half[start:start + len(exact)] = exact
        norm = max(norm, float(np.sqrt(np.einsum("ij,ij->i", exact, exact).max())))
    index = faiss.IndexScalarQuantizer(half.shape[1], faiss.ScalarQuantizer.QT_fp16, faiss.METRIC_INNER_PRODUCT)
    faiss.copy_array_to_vector(half.view(np.uint8).ravel(), index.codes)  # IEEE half, as QT_fp16 stores it
    index.ntotal = len(rows)
    error = HALF_ROUNDING * norm + 2.0 ** -25 * np.sqrt(half.shape[1]) if np.isfinite(half).all() else np.inf
    return Gathered(rows, index, float(error), norm)


def _bytes(gathered: Gathered) -> int:
    return gathered.index.ntotal * gathered.index.code_size
