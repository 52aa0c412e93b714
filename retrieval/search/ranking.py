"""Recall candidates from FAISS and score them per concept with the indexed signals."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from retrieval.core.concepts import Concept, combine
from retrieval.core.scores import unit_similarity
from retrieval.store.catalog import UnitRow
from retrieval.store.vectors import VectorIndex


@dataclass
class Hit:
    unit_id: int
    path: str
    segment: int
    start: float
    end: float
    scores: dict[str, float | None]  # concept key -> similarity in [0, 1], or the reranker's 1-5
    total: float | None  # None when a reranker's answer could not be read (ranked last)
    content_hash: str | None = None
    rank: int = 0
    recall_scores: dict[str, float] = field(default_factory=dict)  # before reranking
    contributions: dict[str, dict[str, float]] = field(default_factory=dict)  # fusion: concept -> signal -> pts
    seen: dict[str, dict] = field(default_factory=dict)  # reranking: concept -> the frames the LMM was shown

    def as_dict(self) -> dict:
        return {
            "rank": self.rank, "path": self.path, "segment": self.segment,
            "start": round(self.start, 3), "end": round(self.end, 3),
            "scores": {k: None if v is None else round(v, 4) for k, v in self.scores.items()},
            "total": None if self.total is None else round(self.total, 4),
            **({"recall_scores": {k: round(v, 4) for k, v in self.recall_scores.items()}}
               if self.recall_scores else {}),
            **({"contributions": {c: {s: round(v, 4) for s, v in parts.items()}
                                  for c, parts in self.contributions.items()}} if self.contributions else {}),
            **({"seen": self.seen} if self.seen else {}),
        }


def recall(anchors: dict[str, np.ndarray], indices: dict[str, VectorIndex], k: int) -> set[int]:
    """Union of the top-``k`` unit ids from every signal's index."""
    ids: set[int] = set()
    for model_id, vector in anchors.items():
        _, found = indices[model_id].search(vector, k)
        ids.update(int(i) for i in found[0] if i >= 0)
    return ids


def score(candidates: list[int], anchors: dict[str, np.ndarray], indices: dict[str, VectorIndex],
          signal_of: dict[str, str]) -> dict[int, dict[str, float]]:
    """Per-candidate, per-concept similarity using each concept's signal (exact dot products)."""
    if not candidates:
        return {}
    ids = np.array(candidates, dtype=np.int64)
    by_signal = {m: unit_similarity(indices[m].vectors(ids) @ anchors[m].ravel()) for m in set(signal_of.values())}
    return {int(u): {c: float(by_signal[m][i]) for c, m in signal_of.items()} for i, u in enumerate(ids)}


def similarities(candidates: list[int], anchors: dict[str, np.ndarray],
                 indices: dict[str, VectorIndex]) -> dict[int, dict[str, float]]:
    """Every signal's similarity for each candidate: unit id -> indexer model id -> (cos+1)/2."""
    ids = np.array(candidates, dtype=np.int64)
    if not len(ids):
        return {}
    by_signal = {m: unit_similarity(indices[m].vectors(ids) @ v.ravel()) for m, v in anchors.items()}
    return {int(u): {m: float(s[i]) for m, s in by_signal.items()} for i, u in enumerate(ids)}


def rank(per_concept: dict[int, dict[str, float]], units: dict[int, UnitRow], concepts: list[Concept],
         keep) -> list[Hit]:
    """Combine concepts (Eq. 2), drop units ``keep`` rejects, sort best first."""
    hits = [
        Hit(u, units[u].path, units[u].segment, units[u].start, units[u].end, scores, combine(scores, concepts),
            units[u].content_hash)
        for u, scores in per_concept.items() if u in units and keep(units[u])
    ]
    return order(hits)


def order(hits: list[Hit]) -> list[Hit]:
    # unreadable (None) totals last; ties broken by path and time so results are stable run to run
    hits.sort(key=lambda h: (h.total is None, -(h.total or 0.0), h.path, h.start))
    for i, hit in enumerate(hits, 1):
        hit.rank = i
    return hits
