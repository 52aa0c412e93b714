"""Recall candidates from FAISS or Lance, score them per concept with the indexed signals, order the hits.

The index only proposes candidates; their scores come from the vectors the catalog holds, so a damaged or
stale FAISS file (or a Lance table a version off) can at worst change which units are recalled, never a score.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable, Iterable

import numpy as np

from retrieval.core.concepts import Concept
from retrieval.core.scores import unit_similarity
from retrieval.search.results import Hit
from retrieval.store.catalog import Catalog
from retrieval.store.catalog.records import UnitRow
from retrieval.store.vectors import signals as signal_vectors
from retrieval.store.vectors.policy import RecallIndex


def recall(anchors: dict[str, np.ndarray], indices: dict[str, RecallIndex], k: int,
           farthest: bool = False, allowed: np.ndarray | None = None) -> dict[int, list[str]]:
    """Union of the top-``k`` unit ids from every signal's index: unit id -> the signals that recalled it.

    ``farthest``: the ``k`` least similar instead (the inner product's largest values for the negated anchor are
    its smallest for the anchor), for ranking by how much candidates differ.  ``allowed``: only these unit ids
    (a ``--where`` filter), searched exactly before anything is ranked.
    """
    found_by: dict[int, list[str]] = {}
    for model_id in sorted(anchors):
        query = -anchors[model_id] if farthest else anchors[model_id]
        _, found = indices[model_id].search(query, k, allowed)
        for i in found[0]:
            if i >= 0:
                found_by.setdefault(int(i), []).append(model_id)
    return found_by


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
    return {m: StoredVectors(signal_vectors.vectors_of(catalog, m, candidates)) for m in set(signals)}


def score(candidates: list[int], anchors: dict[str, np.ndarray], vectors: dict[str, StoredVectors],
          signal_of: dict[str, str], beside: dict[str, str] | None = None) -> dict[int, dict[str, float]]:
    """Per-candidate, per-concept similarity using each concept's signal (exact dot products of stored vectors).

    ``beside``: concept -> a second signal (its description signal) scoring it too; the concept's score is the
    mean of the two where the candidate has both, else its own signal's. A candidate lacking a vector of a
    concept's own signal is left out: no score is made up for it.
    """
    return {u: concept_scores(per) for u, per in evidence(candidates, anchors, vectors, signal_of, beside).items()}


def concept_scores(per: dict[str, dict[str, float]]) -> dict[str, float]:
    """Each concept's score: the mean of its signals' similarities (one signal: that similarity)."""
    return {c: float(np.mean(list(parts.values()))) for c, parts in per.items()}


def evidence(candidates: list[int], anchors: dict[str, np.ndarray], vectors: dict[str, StoredVectors],
             signal_of: dict[str, str], beside: dict[str, str] | None = None) -> dict[int, dict[str, dict[str, float]]]:
    """unit id -> concept -> signal -> similarity: what each concept's score of each candidate rests on."""
    if not candidates:
        return {}
    ids = np.array(candidates, dtype=np.int64)
    used = {*signal_of.values(), *(beside or {}).values()}
    by_signal = {m: unit_similarity(vectors[m].vectors(ids) @ anchors[m].ravel()) for m in used}
    out = {}
    for i, u in enumerate(ids):
        own = {c: by_signal[m][i] for c, m in signal_of.items()}
        if not all(np.isfinite(v) for v in own.values()):
            continue
        out[int(u)] = {c: {signal_of[c]: float(own[c]),
                           **{m: float(by_signal[m][i]) for m in [(beside or {}).get(c)]
                              if m is not None and np.isfinite(by_signal[m][i])}}
                       for c in signal_of}
    return out


def similarities(candidates: list[int], anchors: dict[str, np.ndarray],
                 vectors: dict[str, StoredVectors]) -> dict[int, dict[str, float]]:
    """Every signal's similarity for each candidate: unit id -> indexer model id -> (cos+1)/2 (signals a unit
    has no vector from are absent)."""
    ids = np.array(candidates, dtype=np.int64)
    if not len(ids):
        return {}
    by_signal = {m: unit_similarity(vectors[m].vectors(ids) @ v.ravel()) for m, v in anchors.items()}
    return {int(u): {m: float(s[i]) for m, s in by_signal.items() if np.isfinite(s[i])} for i, u in enumerate(ids)}


def rank(evidence: dict[int, dict[str, dict[str, float]]], units: dict[int, UnitRow], concepts: list[Concept],
         keep: Callable[[UnitRow], bool], recalled_by: dict[int, list[str]] | None = None) -> list[Hit]:
    """Each concept's score is the mean of its signals' similarities (``evidence``), the concepts combine by
    Eq. 2; units ``keep`` rejects are dropped; best first (not yet numbered)."""
    return best_first(Hit.recalled(units[u], concept_scores(per), concepts, per, tuple((recalled_by or {}).get(u, ())))
                      for u, per in evidence.items() if u in units and keep(units[u]))


def best_first(hits: Iterable[Hit]) -> list[Hit]:
    # unreadable (None) totals last; equal totals by the total before reranking or fusion (a fused score is flat
    # where its learned map is, an LMM answers in few steps), then by path and time so runs agree
    return sorted(hits, key=lambda h: (h.total is None, -(h.total or 0.0), -(h.recall_total or 0.0), h.path,
                                       h.start))


def least_first(hits: Iterable[Hit]) -> list[Hit]:
    """The most different first: lowest totals first (unreadable ones still last); ties by the lower total before
    reranking or fusion, then by path and time."""
    return sorted(hits, key=lambda h: (h.total is None, h.total or 0.0, h.recall_total or 0.0, h.path, h.start))


def ordered(hits: Iterable[Hit], most_different: bool = False) -> list[Hit]:
    return least_first(hits) if most_different else best_first(hits)


def one_per_copy(hits: Iterable[Hit]) -> list[Hit]:
    """``hits`` in their order with byte-identical files' same span shown once: the first keeps its place and names
    the others' paths (``same_bytes_as``); they are the same clip, and k results are k different ones. Duplicates
    stay listed by ``convis dupes``, where a user decides which to keep."""
    first: dict[tuple, int] = {}
    kept: list[Hit] = []
    for hit in hits:
        key = (hit.content_hash, round(hit.start, 3), round(hit.end, 3))
        at = first.get(key) if hit.content_hash else None
        if at is None:
            first[key] = len(kept)
            kept.append(hit)
        elif hit.path != kept[at].path:
            kept[at] = replace(kept[at], same_bytes_as=(*kept[at].same_bytes_as, hit.path))
    return kept


def ranked(hits: Iterable[Hit], most_different: bool = False) -> list[Hit]:
    """The final order (best first, or the most different first), numbered from 1."""
    return [replace(hit, rank=i) for i, hit in enumerate(ordered(hits, most_different), 1)]
