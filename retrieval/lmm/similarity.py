"""LMM reranking of recalled candidates: each (anchor, candidate) pair rated per concept, the reranked hits.

Each clip is decoded once per command (``FrameCache``); every directional score is stored in the score cache
(``CachedScores``), keyed by the reranker's identity (model, revision, prompt version, frame count), the concept,
the scoring mode and both clips' content hashes and time spans, so a repeated query makes no model call.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Mapping, Protocol, Sequence, TypeVar

from rerankers.base import PairScore, average_scores, check_mode
from retrieval.core.concepts import Concept
from retrieval.lmm.cached_scores import CachedScores
from retrieval.lmm.clips import ClipRef, FrameCache, seen


class PairScorer:
    """Scores (anchor, candidate) pairs per concept with a reranker: cache first, model for the rest."""

    def __init__(self, reranker, cache: CachedScores | None, frames: FrameCache | None = None,
                 mode: str = "expected", symmetric: bool = False):
        check_mode(mode)
        self.reranker, self.cache, self.mode, self.symmetric = reranker, cache, mode, symmetric
        self.frames = frames or FrameCache()
        self.model_pairs = 0  # pairs sent to the model (cache misses), for reporting and tests

    def score(self, pairs: Sequence[tuple[ClipRef, ClipRef]], concept: Concept) -> list[PairScore]:
        forward = self._directional(list(pairs), concept)
        if not self.symmetric:
            return forward
        backward = self._directional([(b, a) for a, b in pairs], concept)
        return [average_scores(ab, ba) for ab, ba in zip(forward, backward, strict=False)]

    def _directional(self, pairs: list[tuple[ClipRef, ClipRef]], concept: Concept) -> list[PairScore]:
        tag = self.reranker.cache_tag
        found = [self._cached(tag, concept, a, b) for a, b in pairs]
        missing = [i for i, score in enumerate(found) if score is None]
        if missing:
            spec = self.reranker.frame_spec  # the family's frames, decoded at its size
            decoded = [(self.frames.get(pairs[i][0], spec), self.frames.get(pairs[i][1], spec)) for i in missing]
            scored = self.reranker.score_pairs([(a.pixels, b.pixels) for a, b in decoded], concept.words,
                                               self.mode, prepared=True)
            self.model_pairs += len(missing)
            for i, score, (a, b) in zip(missing, scored, decoded, strict=False):
                found[i] = replace(score, evidence={**(score.evidence or {}), "a": seen(a), "b": seen(b)})
                if self.cache:
                    self.cache.put(tag, concept.words, self.mode, pairs[i][0].key, pairs[i][1].key, found[i])
        return found


    def _cached(self, tag: str, concept: Concept, a: ClipRef, b: ClipRef) -> PairScore | None:
        """A kept answer, on the reranker's scale (a store keeps the number; the tag says whose it is)."""
        found = self.cache.get(tag, concept.words, self.mode, a.key, b.key) if self.cache else None
        return None if found is None else replace(found, scale=self.reranker.scale)


Candidate = TypeVar("Candidate", bound="Rerankable")


class Rerankable(Protocol):
    """A recalled hit (``retrieval.search.results.Hit``): its unit's file, relative to the index's root, and
    span; ``reranked`` gives the hit scored by the reranker's answers."""

    path: str
    content_hash: str | None
    start: float
    end: float

    def reranked(self: Candidate, answers: Mapping[str, PairScore], concepts: list[Concept]) -> Candidate: ...


def rerank(scorer: PairScorer, anchor: ClipRef, hits: Sequence[Candidate], concepts: list[Concept],
           root: Path) -> list[Candidate]:
    """``hits`` scored per concept by the reranker against ``anchor`` (hit paths are relative to ``root``)."""
    clips = [ClipRef(str(root / h.path), h.content_hash, h.start, h.end) for h in hits]
    answers = {c.key: scorer.score([(anchor, clip) for clip in clips], c) for c in concepts}
    return [hit.reranked({c.key: answers[c.key][i] for c in concepts}, concepts) for i, hit in enumerate(hits)]
