"""Recall candidates from FAISS, score them per concept with the indexed signals, order the hits.

FAISS only proposes candidates; their scores come from the vectors the catalog holds, so a
damaged or stale FAISS file can at worst change which units are recalled, never a score.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable, Iterable

import numpy as np

from retrieval.core.concepts import Concept
from retrieval.core.scores import unit_similarity
from retrieval.search.results import Hit
from retrieval.store.catalog import Catalog, UnitRow
from retrieval.store.vectors import VectorIndex


def recall(anchors: dict[str, np.ndarray], indices: dict[str, VectorIndex], k: int) -> set[int]:
    """Union of the top-``k`` unit ids from every signal's index."""
    ids: set[int] = set()
    for model_id, vector in anchors.items():
        _, found = indices[model_id].search(vector, k)
        ids.update(int(i) for i in found[0] if i >= 0)
    return ids


@dataclass(frozen=True)
class StoredVectors:
    """One signal's vectors of a set of units, read from the catalog (unit id -> vector)."""

    rows: dict[int, np.ndarray]

    def vectors(self, ids: np.ndarray) -> np.ndarray:
        """Rows for ``ids`` in order; a unit without a vector from this signal gets NaN (no score)."""
        width = len(next(iter(self.rows.values()))) if self.rows else 1
        missing = np.full(width, np.nan, np.float32)
        return np.stack([self.rows.get(int(i), missing) for i in ids]) if len(ids) else np.zeros((0, width))


def stored_vectors(catalog: Catalog, signals: Iterable[str], candidates: list[int]) -> dict[str, StoredVectors]:
    """The catalog's vectors of ``candidates`` for each signal: what scores are computed from."""
    return {m: StoredVectors(catalog.vectors_of(m, candidates)) for m in set(signals)}


def score(candidates: list[int], anchors: dict[str, np.ndarray], vectors: dict[str, StoredVectors],
          signal_of: dict[str, str]) -> dict[int, dict[str, float]]:
    """Per-candidate, per-concept similarity using each concept's signal (exact dot products of stored vectors).

    A candidate lacking a vector of a signal it needs is left out: no score is made up for it.
    """
    if not candidates:
        return {}
    ids = np.array(candidates, dtype=np.int64)
    by_signal = {m: unit_similarity(vectors[m].vectors(ids) @ anchors[m].ravel()) for m in set(signal_of.values())}
    scored = {int(u): {c: float(by_signal[m][i]) for c, m in signal_of.items()} for i, u in enumerate(ids)}
    return {u: s for u, s in scored.items() if all(np.isfinite(v) for v in s.values())}


def similarities(candidates: list[int], anchors: dict[str, np.ndarray],
                 vectors: dict[str, StoredVectors]) -> dict[int, dict[str, float]]:
    """Every signal's similarity for each candidate: unit id -> indexer model id -> (cos+1)/2 (signals a unit
    has no vector from are absent)."""
    ids = np.array(candidates, dtype=np.int64)
    if not len(ids):
        return {}
    by_signal = {m: unit_similarity(vectors[m].vectors(ids) @ v.ravel()) for m, v in anchors.items()}
    return {int(u): {m: float(s[i]) for m, s in by_signal.items() if np.isfinite(s[i])} for i, u in enumerate(ids)}


def rank(per_concept: dict[int, dict[str, float]], units: dict[int, UnitRow], concepts: list[Concept],
         keep: Callable[[UnitRow], bool]) -> list[Hit]:
    """Combine concepts (Eq. 2), drop units ``keep`` rejects, sort best first (not yet numbered)."""
    return best_first(Hit.recalled(units[u], scores, concepts)
                      for u, scores in per_concept.items() if u in units and keep(units[u]))


def best_first(hits: Iterable[Hit]) -> list[Hit]:
    # unreadable (None) totals last; equal totals by the total before reranking or fusion (a fused score is flat
    # where its learned map is, an LMM answers in few steps), then by path and time so runs agree
    return sorted(hits, key=lambda h: (h.total is None, -(h.total or 0.0), -(h.recall_total or 0.0), h.path,
                                       h.start))


def ranked(hits: Iterable[Hit]) -> list[Hit]:
    """The final order, numbered from 1."""
    return [replace(hit, rank=i) for i, hit in enumerate(best_first(hits), 1)]
