"""A FAISS search restricted to some units, exact over them, so that a filter loses nothing.

Filtering after an approximate search drops what the index never proposed: a filter keeping 1% of the units
leaves about 1% of the k proposed.  Here the allowed unit ids go to FAISS as an ID selector
(``faiss.SearchParameters(sel=IDSelectorBitmap)``) and the search is exhaustive over them: an inverted-file
index probes every list (it stores whole vectors, so this is an exact search of the allowed rows), a graph
index is searched through its flat storage, and a handful of allowed rows are scored directly from their
reconstructed vectors.  The result is what an exact search of the allowed rows gives.
"""

from __future__ import annotations

import faiss
import numpy as np

# At most this many allowed rows are scored from their reconstructed vectors (about 1.5 us a row); more are left
# to FAISS's selector, whose cost is a bit test per indexed row plus a dot product per allowed one.
FEW_ROWS = 512


def search(index: faiss.Index, queries: np.ndarray, k: int, allowed: np.ndarray,
           held: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(scores, ids) of the ``k`` best of ``allowed`` (unit ids) for each query row of ``index`` (an IDMap2 over
    the catalog's unit ids, as ``VectorIndex`` builds; ``held``: its ids, sorted); missing slots have id -1."""
    allowed = np.unique(np.asarray(allowed, dtype=np.int64))
    if len(allowed) == 0 or index.ntotal == 0:
        return _empty(len(queries), k)
    if len(allowed) <= FEW_ROWS:
        return _scored(index, queries, k, allowed[_members(allowed, held)])
    bitmap = _bitmap(allowed)  # kept alive while FAISS reads it
    selector = faiss.IDSelectorBitmap(bitmap)
    inner = faiss.downcast_index(index.index)
    if isinstance(inner, faiss.IndexHNSW):
        return _through_storage(index, inner, queries, k, selector)
    ivf = _ivf(inner)
    if ivf is not None:
        return index.search(queries, k, params=faiss.SearchParametersIVF(sel=selector, nprobe=ivf.nlist))
    return index.search(queries, k, params=faiss.SearchParameters(sel=selector))


def _members(ids: np.ndarray, held: np.ndarray) -> np.ndarray:
    """Which of ``ids`` are among the sorted ``held``."""
    at = np.minimum(np.searchsorted(held, ids), max(len(held) - 1, 0))
    return held[at] == ids if len(held) else np.zeros(len(ids), bool)


def _scored(index: faiss.Index, queries: np.ndarray, k: int, held: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Inner products with the allowed rows' own vectors (``held``: those the index holds), best first."""
    if len(held) == 0:
        return _empty(len(queries), k)
    scores = queries @ index.reconstruct_batch(held).T
    order = np.argsort(-scores, axis=1, kind="stable")[:, :k]
    top_scores, top_ids = np.take_along_axis(scores, order, axis=1), held[order]
    pad = k - top_ids.shape[1]
    return (np.pad(top_scores, ((0, 0), (0, pad)), constant_values=-np.inf).astype(np.float32),
            np.pad(top_ids, ((0, 0), (0, pad)), constant_values=-1))


def _through_storage(index: faiss.Index, hnsw: faiss.IndexHNSW, queries: np.ndarray, k: int,
                     selector: faiss.IDSelector) -> tuple[np.ndarray, np.ndarray]:
    """A graph index's flat storage searched over the allowed rows (a graph walk with most nodes filtered out
    strands itself), its row numbers turned back into unit ids."""
    id_map = faiss.vector_to_array(index.id_map)
    translated = faiss.IDSelectorTranslated(index.id_map, selector)
    scores, rows = hnsw.storage.search(queries, k, params=faiss.SearchParameters(sel=translated))
    return scores, np.where(rows >= 0, id_map[np.maximum(rows, 0)], -1)


def _bitmap(allowed: np.ndarray) -> np.ndarray:
    """One bit per unit id up to the largest allowed, set for the allowed ones (FAISS reads bit ``id & 7`` of
    byte ``id >> 3``)."""
    bits = np.zeros(int(allowed[-1]) + 1, dtype=bool)
    bits[allowed[allowed >= 0]] = True
    return np.packbits(bits, bitorder="little")


def _ivf(index: faiss.Index):
    try:
        return faiss.extract_index_ivf(index)
    except RuntimeError:
        return None  # not an inverted-file index


def _empty(queries: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    return np.full((queries, k), -np.inf, np.float32), np.full((queries, k), -1, np.int64)
