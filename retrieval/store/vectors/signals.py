"""A signal's vectors as recall and scoring read them: stored ones as they are, CLIPScore's composed.

Every vector signal scores a pair by ``(q . s + 1) / 2``, ``q`` the anchor's query vector and ``s`` the
candidate's stored vector. For an indexer or a description signal both are the stored vector. CLIPScore
(``clipscore:<model id>``) is made from two stored signals of one CLIP-family model, the video vectors ``v``
and the caption text vectors ``t``:

    s = [t, v] / sqrt(2)        q = [v, t] / sqrt(2)        q . s = (v_a . t_b + t_a . v_b) / 2

which is exactly the reference's mean of cos(video 1, caption 2) and cos(video 2, caption 1) (all vectors are
unit length). So one FAISS index of ``s`` recalls by the exact CLIPScore, and nothing beyond the two stored
signals is kept in the catalog: a unit lacking either has no CLIPScore vector.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from retrieval.core.signal_kinds import CAPTION, clipscore_id, clipscore_parts
from retrieval.store.catalog import Catalog

HALF = np.float32(1 / np.sqrt(2))  # keeps the composed vectors unit length


def stored_side(video: np.ndarray, text: np.ndarray) -> np.ndarray:
    """A candidate's CLIPScore vector(s) from its video and caption text vector(s)."""
    return np.concatenate([text, video], axis=-1).astype(np.float32) * HALF


def query_side(video: np.ndarray, text: np.ndarray) -> np.ndarray:
    """An anchor's CLIPScore query vector(s): the halves swapped."""
    return np.concatenate([video, text], axis=-1).astype(np.float32) * HALF


def vectors(catalog: Catalog, signal: str) -> tuple[np.ndarray, np.ndarray]:
    """(unit ids, matrix) of every stored-side vector of ``signal`` (what its FAISS index holds)."""
    parts = clipscore_parts(signal)
    if parts is None:
        return catalog.vectors(signal)
    (video_ids, video), (text_ids, text) = catalog.vectors(parts[0]), catalog.vectors(parts[1])
    both, vi, ti = np.intersect1d(video_ids, text_ids, return_indices=True)
    if not len(both):
        return np.zeros(0, np.int64), np.zeros((0, video.shape[1] + text.shape[1]), np.float32)
    return both.astype(np.int64), stored_side(video[vi], text[ti])


def vectors_of(catalog: Catalog, signal: str, unit_ids: Sequence[int]) -> dict[int, np.ndarray]:
    """Stored-side vectors of ``unit_ids`` (those that have one): the exact values scores are computed from."""
    parts = clipscore_parts(signal)
    if parts is None:
        return catalog.vectors_of(signal, unit_ids)
    video, text = (catalog.vectors_of(p, unit_ids) for p in parts)
    return {u: stored_side(video[u], text[u]) for u in video if u in text}


def ids_of(catalog: Catalog, signal: str) -> np.ndarray:
    """The unit ids recall searches that have a vector of ``signal`` (CLIPScore: of both its parts), ascending."""
    parts = clipscore_parts(signal)
    if parts is None:
        return catalog.vector_ids(signal)
    return np.intersect1d(catalog.vector_ids(parts[0]), catalog.vector_ids(parts[1]))


def sides_of(catalog: Catalog, signal: str, unit_ids: Sequence[int]) -> tuple[dict[int, np.ndarray],
                                                                             dict[int, np.ndarray]]:
    """(query side, stored side) vectors of ``unit_ids``: a unit as an anchor, and as a candidate; the same vectors
    for every signal but CLIPScore."""
    parts = clipscore_parts(signal)
    if parts is None:
        stored = catalog.vectors_of(signal, unit_ids)
        return stored, stored
    video, text = (catalog.vectors_of(p, unit_ids) for p in parts)
    both = [u for u in video if u in text]
    return ({u: query_side(video[u], text[u]) for u in both}, {u: stored_side(video[u], text[u]) for u in both})


def query_vectors(catalog: Catalog, path: str, signal: str) -> np.ndarray:
    """The query-side vectors of the indexed file ``path``'s units, in segment order; for CLIPScore only the
    units that have both parts (matched by unit id)."""
    parts = clipscore_parts(signal)
    if parts is None:
        return catalog.unit_vectors(path, signal)
    ids = catalog.unit_ids(path)
    video, text = (catalog.vectors_of(p, ids) for p in parts)
    both = [u for u in ids if u in video and u in text]
    if not both:
        return np.zeros((0, 0), np.float32)
    return query_side(np.stack([video[u] for u in both]), np.stack([text[u] for u in both]))


def count(catalog: Catalog, signal: str) -> int:
    """How many units ``signal`` has a vector of (a saved FAISS index holding another number is stale): counted
    in the catalog, never by loading the vectors."""
    parts = clipscore_parts(signal)
    return catalog.vector_count_both(*parts) if parts else catalog.vector_count(signal)


def clipscore_signals(catalog: Catalog) -> dict[str, str]:
    """Indexer name -> CLIPScore signal id, for each visual indexer whose text vectors of the captions the
    catalog holds."""
    visual = {row.indexer: row.name for row in catalog.indexers() if row.kind != "text"}
    return {visual[row.indexer]: clipscore_id(row.indexer) for row in catalog.description_signals()
            if row.concept == CAPTION and row.indexer in visual}


def index_signals(catalog: Catalog) -> list[str]:
    """Every signal recall searches an index (FAISS or Lance) of: indexers, description signals and CLIPScore."""
    signals = [row.indexer for row in catalog.indexers()] + [row.signal for row in catalog.description_signals()]
    return signals + list(clipscore_signals(catalog).values())
