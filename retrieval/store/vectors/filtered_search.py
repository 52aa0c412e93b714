"""A FAISS search restricted to some units, exact over them, so that a filter loses nothing.

Filtering after an approximate search drops what the index never proposed: a filter keeping 1% of the units
leaves about 1% of the k proposed.  Here the filter is applied inside the search, by one of four paths, chosen
per call from the index kind, how many units the filter keeps and whether it was seen before; each gives what an
exact search of the kept units gives:

- a filter that comes back (or a batch of queries) is answered from its kept rows gathered once into a
  half-precision matrix (``kept_rows``): its scores propose the k + ``EXTRA_CANDIDATES`` best, rescored from the
  index's float32 vectors, and the result stands only when the k-th of them beats the best any row left out could
  score (its half-precision score plus the rounding bound); otherwise that query takes the paths below.  On 100k
  x 768 vectors a 10% filter took 1.5 to 2 ms a query this way against 7 to 16 ms through the IVF selector (the
  unfiltered IVF search: 1.4 ms) on a lightly loaded machine; on a busy one 3.7 against 8.9 ms of CPU (1.65
  unfiltered), the gathered rows no longer staying in cache.  Bounding each list by its
  centroid and radius (q.c + |q| r) instead, to stop probing early, pruned nothing: radii near 1 on unit vectors
  left every list's bound above the 10th score;
- an index whose vectors sit in one flat matrix (``Flat``; ``HNSW..`` over flat storage) reads the kept rows
  only: one inner product a kept row (``fvec_inner_products_by_idx``), or for a batch of queries the kept rows
  gathered into one matrix and one BLAS product.  Its cost is reading the kept vectors, so a filter is never
  slower than the unfiltered ``Flat`` scan.  The graph is not walked: with the filter inside the walk and
  efSearch scaled by the kept share's inverse it missed some of the exact top 10 at 10% and 50% and took longer
  than this scan below 50% (bench/perf/filtered.py's data);
- a handful of kept rows of any other index are scored from their reconstructed vectors;
- more go to FAISS as a selector over row numbers (``IDSelectorBitmap``): an inverted-file index probes every list
  (it stores whole vectors). Probing only nprobe / kept share lists, the index's own approximation with the filter
  inside, was about 10x faster at 50% on 100k x 768 vectors but found 87% to 95% of the exact top 10 on smaller
  collections, so it is not used.
"""

from __future__ import annotations

from typing import Callable

import faiss
import numpy as np

from retrieval.store.vectors.kept_rows import Cache, Gathered

# At most this many kept rows of an index without flat storage are scored from their reconstructed vectors
# (about 1.5 us a row); more are left to FAISS's selector, a bit test per indexed row plus a product per kept one.
FEW_ROWS = 512
# A batch of at least this many queries gathers the kept rows once: in half precision, kept for the filter's later
# queries (``kept_rows``), or, when they do not fit there, as float32 rows of a flat matrix for one BLAS product.
# Fewer queries score in place, one query's kept rows at a time, until the filter comes back.
GATHER_FROM_QUERIES = 20
# Half-precision candidates rescored in float32 a query: the k best and this many more, so that the k-th exact score
# usually clears the bound on every row left out (otherwise the query is searched exactly)
EXTRA_CANDIDATES = 32
REFINED_ROWS = 16_384  # candidate vectors read back at once (48 MB at 768-d): a batch is rescored in parts
CACHE = Cache()  # filters gathered in this process, shared by every index (keyed by the index's identity)
# Unit ids up to this many times the row count are looked up in a table indexed by id (4 bytes an id: 32 MB at
# most for 1M units), sparser ones by binary search.
SPARSE_IDS = 8


def search(index: faiss.Index, queries: np.ndarray, k: int, allowed: np.ndarray,
           rows: "Rows", key: str | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(scores, ids) of the ``k`` best of ``allowed`` (unit ids) for each query row of ``index`` (an IDMap2 over
    the catalog's unit ids, as ``VectorIndex`` builds; ``rows``: where it stores each); missing slots have id -1.
    ``key``: the index's identity, under which a filter's kept rows may be gathered (``kept_rows``)."""
    allowed = _sorted_unique(np.asarray(allowed, dtype=np.int64))
    if len(allowed) == 0 or index.ntotal == 0:
        return _empty(len(queries), k)
    at = rows.of(allowed)
    held, kept = allowed[at >= 0], at[at >= 0]
    inner = faiss.downcast_index(index.index)
    flat = _flat_storage(inner)

    def exact(asked: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if flat is not None:
            return _scanned(flat, asked, k, held, kept)
        if len(held) <= FEW_ROWS:
            return _scored(index, asked, k, held)
        return _selected(inner, asked, k, kept, rows.ids)

    if key is not None and len(kept) > max(FEW_ROWS, k + EXTRA_CANDIDATES):  # else every kept row is a candidate
        read = _reader(inner, flat, rows)
        gathered = CACHE.get(key, np.ascontiguousarray(kept, dtype=np.int64), inner.d, len(queries),
                             GATHER_FROM_QUERIES, read)
        if gathered is not None:
            step = max(1, REFINED_ROWS // (k + EXTRA_CANDIDATES))  # queries rescored at a time
            parts = [_refined(gathered, read, queries[at:at + step], k, rows.ids, exact)
                     for at in range(0, len(queries), step)]
            return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])
    return exact(queries)


class Rows:
    """Where an IDMap2 index stores each unit id (``id_map``: the id at each row), looked up for a filter's
    thousands of ids at once: a catalog's ids are dense (deletions aside), and a binary search of 50,000 ids took
    a millisecond a query, about what an unfiltered search of a 100k-vector IVF index takes (ids sparser than
    ``SPARSE_IDS`` a row are still binary-searched)."""

    def __init__(self, id_map: np.ndarray):
        self.ids = id_map  # the unit id at each row
        self._order = np.argsort(id_map, kind="stable")
        self._sorted = id_map[self._order]
        top = int(self._sorted[-1]) + 1 if len(id_map) else 0
        self._table = None
        if 0 < len(id_map) < 2**31 and self._sorted[0] >= 0 and top <= SPARSE_IDS * len(id_map):
            self._table = np.full(top, -1, np.int32)
            self._table[id_map] = np.arange(len(id_map), dtype=np.int32)

    def places(self, ivf) -> tuple[np.ndarray, np.ndarray]:
        """(list, offset in it) of each row of the inverted-file index ``ivf``, read from its direct map once."""
        if getattr(self, "_places", None) is None:
            packed = faiss.vector_to_array(ivf.direct_map.array)  # list << 32 | offset
            self._places = (packed >> 32, packed & 0xFFFFFFFF)
        return self._places

    def of(self, ids: np.ndarray) -> np.ndarray:
        """The row of each of ``ids``; -1 for an id the index does not hold."""
        if not len(self._sorted):
            return np.full(len(ids), -1, np.int64)
        if self._table is not None:
            inside = (ids >= 0) & (ids < len(self._table))
            return np.where(inside, self._table[np.where(inside, ids, 0)], -1)
        at = np.minimum(np.searchsorted(self._sorted, ids), len(self._sorted) - 1)
        return np.where(self._sorted[at] == ids, self._order[at], -1)


def _sorted_unique(ids: np.ndarray) -> np.ndarray:
    """``ids`` sorted without repeats; a filter's ids usually are already, and checking is cheaper than sorting."""
    if len(ids) < 2 or bool((ids[1:] > ids[:-1]).all()):
        return ids
    return np.unique(ids)


def _flat_storage(inner: faiss.Index) -> faiss.IndexFlat | None:
    """The flat inner-product matrix an index keeps its vectors in, when it has one."""
    storage = faiss.downcast_index(inner.storage) if isinstance(inner, faiss.IndexHNSW) else inner
    if isinstance(storage, faiss.IndexFlat) and storage.metric_type == faiss.METRIC_INNER_PRODUCT:
        return storage
    return None


def _scanned(flat: faiss.IndexFlat, queries: np.ndarray, k: int, ids: np.ndarray,
             rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Exact inner products of each query with the kept ``rows`` of ``flat`` (unit ``ids``), best first."""
    if len(rows) == 0:
        return _empty(len(queries), k)
    rows = np.ascontiguousarray(rows, dtype=np.int64)
    if len(queries) >= GATHER_FROM_QUERIES:
        matrix = faiss.rev_swig_ptr(flat.get_xb(), flat.ntotal * flat.d).reshape(flat.ntotal, flat.d)
        return _best(queries @ matrix[rows].T, ids, k)
    scores = np.empty((len(queries), len(rows)), np.float32)
    for at, query in enumerate(queries):
        faiss.fvec_inner_products_by_idx(faiss.swig_ptr(scores[at]), faiss.swig_ptr(query), flat.get_xb(),
                                         faiss.swig_ptr(rows), flat.d, 1, len(rows))
    return _best(scores, ids, k)


def _reader(inner: faiss.Index, flat: faiss.IndexFlat | None, rows: "Rows") -> Callable[[np.ndarray], np.ndarray]:
    """A function giving the float32 vectors at some rows of ``inner`` (``flat``: its flat storage, if any)."""
    if flat is not None:
        matrix = faiss.rev_swig_ptr(flat.get_xb(), flat.ntotal * flat.d).reshape(flat.ntotal, flat.d)
        return lambda at: matrix[at]
    ivf = _ivf(inner)
    def read(at: np.ndarray) -> np.ndarray:
        if len(at) > FEW_ROWS and _lists_in_memory(ivf):
            return _from_lists(ivf, rows.places(ivf), at)  # many rows: a list at a time
        return inner.reconstruct_batch(np.ascontiguousarray(at, dtype=np.int64))
    return read


def _lists_in_memory(ivf) -> bool:
    """Whether ``ivf`` keeps whole float32 vectors in in-memory lists with a row -> (list, offset) array."""
    return (isinstance(faiss.downcast_index(ivf), faiss.IndexIVFFlat) and ivf.metric_type == faiss.METRIC_INNER_PRODUCT
            and ivf.direct_map.type == faiss.DirectMap.Array
            and isinstance(faiss.downcast_InvertedLists(ivf.invlists), faiss.ArrayInvertedLists))


def _from_lists(ivf, places: tuple[np.ndarray, np.ndarray], at: np.ndarray) -> np.ndarray:
    """The vectors at rows ``at`` of an IVF-Flat index, copied from its lists a list at a time: FAISS's own
    reconstruct_batch took 340 ms for 10,000 rows of a 100k x 768 index, this about a tenth of it."""
    lists, offsets = places[0][at], places[1][at]
    out = np.empty((len(at), ivf.d), np.float32)
    order = np.argsort(lists, kind="stable")
    starts = np.flatnonzero(np.r_[True, lists[order][1:] != lists[order][:-1]])
    for first, end in zip(starts, np.r_[starts[1:], len(order)], strict=True):
        chosen = order[first:end]
        listed = int(lists[chosen[0]])
        size = ivf.invlists.list_size(listed)
        codes = faiss.rev_swig_ptr(ivf.invlists.get_codes(listed), size * ivf.code_size)
        out[chosen] = codes.view(np.float32).reshape(size, ivf.d)[offsets[chosen]]
    return out


def _refined(gathered: Gathered, read: Callable[[np.ndarray], np.ndarray], queries: np.ndarray, k: int,
             ids: np.ndarray, exact: Callable) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` best kept rows by float32 score among the half-precision search's best; a query whose k-th score
    does not clear the best score any row left out could have (its half-precision score plus the rounding bound)
    is searched ``exact``-ly instead, so the result is always the exact one."""
    wanted = k + EXTRA_CANDIDATES  # fewer than the kept rows (``search``)
    approx, at = gathered.index.search(queries, wanted)
    candidates = gathered.rows[at]  # (queries, wanted) row numbers
    vectors = read(candidates.ravel()).reshape(len(queries), wanted, -1)
    scores = np.einsum("qwd,qd->qw", vectors, queries)
    order = np.argsort(-scores, axis=1, kind="stable")[:, :k]
    top_scores, top_rows = np.take_along_axis(scores, order, axis=1), np.take_along_axis(candidates, order, axis=1)
    reach = approx[:, -1] + gathered.bound(np.linalg.norm(queries, axis=1))  # the best any row left out may score
    unsure = ~(top_scores[:, -1] > reach)  # NaN included
    top_scores, top_ids = top_scores.astype(np.float32), ids[top_rows]
    if unsure.any():
        top_scores[unsure], top_ids[unsure] = exact(queries[unsure])
    return top_scores, top_ids


def _scored(index: faiss.Index, queries: np.ndarray, k: int, held: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Inner products with the allowed rows' own vectors (``held``: those the index holds), best first."""
    if len(held) == 0:
        return _empty(len(queries), k)
    return _best(queries @ index.reconstruct_batch(held).T, held, k)


def _best(scores: np.ndarray, ids: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` highest of each row of ``scores`` (columns: ``ids``), best first, padded with id -1."""
    if scores.shape[1] > k:  # a partial sort of thousands of scores, then a full one of the k
        part = np.argpartition(-scores, k - 1, axis=1)[:, :k]
        order = np.take_along_axis(part, np.argsort(-np.take_along_axis(scores, part, axis=1), axis=1,
                                                    kind="stable"), axis=1)
    else:
        order = np.argsort(-scores, axis=1, kind="stable")
    top_scores, top_ids = np.take_along_axis(scores, order, axis=1), ids[order]
    pad = k - top_ids.shape[1]
    return (np.pad(top_scores, ((0, 0), (0, pad)), constant_values=-np.inf).astype(np.float32),
            np.pad(top_ids, ((0, 0), (0, pad)), constant_values=-1))


def _selected(inner: faiss.Index, queries: np.ndarray, k: int, kept: np.ndarray,
              ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """FAISS's own search of the index under the id map with the ``kept`` rows as a selector, its rows turned
    back into unit ``ids``: every list of an inverted-file index probed (it stores whole vectors, so this is
    exact), a graph index's (compressed) storage scanned (a graph walk with most nodes filtered out strands
    itself).  The selector is over row numbers, so FAISS need not translate each row to its unit id."""
    bits = np.zeros(len(ids), dtype=bool)
    bits[kept] = True
    bitmap = np.packbits(bits, bitorder="little")  # kept alive while FAISS reads it; bit r & 7 of byte r >> 3
    selector = faiss.IDSelectorBitmap(bitmap)
    ivf = _ivf(inner)
    if isinstance(inner, faiss.IndexHNSW):
        inner, params = inner.storage, faiss.SearchParameters(sel=selector)
    elif ivf is not None:
        params = faiss.SearchParametersIVF(sel=selector, nprobe=ivf.nlist)
    else:
        params = faiss.SearchParameters(sel=selector)
    scores, rows = inner.search(queries, k, params=params)
    return scores, np.where(rows >= 0, ids[np.maximum(rows, 0)], -1)


def _ivf(index: faiss.Index):
    try:
        return faiss.extract_index_ivf(index)
    except RuntimeError:
        return None  # not an inverted-file index


def _empty(queries: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    return np.full((queries, k), -np.inf, np.float32), np.full((queries, k), -1, np.int64)
