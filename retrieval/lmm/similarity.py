"""LMM reranking of recalled candidates: each (anchor, candidate) pair rated per concept, the reranked hits.

Each clip is decoded once per command (``FrameCache``), the next pairs' clips while the model scores the first
(``PairScorer._decoded``); every directional score is stored in the score cache
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
from retrieval.lmm.feed import Failed, Feed


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
        spec = self.reranker.frame_spec  # the family's frames, decoded at its size
        for chunk, decoded in self._decoded(pairs, missing, spec):
            scored = self.reranker.score_pairs([(a.pixels, b.pixels) for a, b in decoded], concept.words,
                                               self.mode, prepared=True)
            self.model_pairs += len(chunk)
            for i, score, (a, b) in zip(chunk, scored, decoded, strict=False):
                found[i] = replace(score, evidence={**(score.evidence or {}), "a": seen(a), "b": seen(b)})
                if self.cache:
                    self.cache.put(tag, concept.words, self.mode, pairs[i][0].key, pairs[i][1].key, found[i])
        return found

    def _cached(self, tag: str, concept: Concept, a: ClipRef, b: ClipRef) -> PairScore | None:
        """A kept answer, on the reranker's scale (a store keeps the number; the tag says whose it is)."""
        found = self.cache.get(tag, concept.words, self.mode, a.key, b.key) if self.cache else None
        return None if found is None else replace(found, scale=self.reranker.scale)

    def _decoded(self, pairs: list[tuple[ClipRef, ClipRef]], missing: list[int], spec):
        """(indices, their pairs' frames) to score. With every clip decoded already, one chunk; else chunks that
        grow (``fed_chunks``) while a thread decodes the next one's clips (``retrieval.lmm.feed``), so the model
        starts on the first pairs while the rest decode, and each chunk's scores are kept as it finishes."""
        if not missing:
            return
        if all(self.frames.has(clip, spec) for i in missing for clip in pairs[i]):
            yield missing, [(self.frames.get(pairs[i][0], spec), self.frames.get(pairs[i][1], spec)) for i in missing]
            return

        def both(i: int):
            return self.frames.get(pairs[i][0], spec), self.frames.get(pairs[i][1], spec)

        batches, handed = Feed(both)(fed_chunks(missing, max(1, self.reranker.batch_size))), 0
        try:
            for ready in batches:
                if any(isinstance(value, Failed) for value in ready.values):
                    break
                yield ready.items, ready.values
                handed += len(ready.items)
            else:
                return
        finally:
            batches.close()  # the decoding thread stopped: the decoder is this thread's again
        # a clip failed to decode: the rest in this thread, where it raises its own error as before the feed
        rest = missing[handed:]
        yield rest, [both(i) for i in rest]


def fed_chunks(items: list, batch: int) -> list[list]:
    """``items`` in chunks of 2 batches, then 4, 8, ...: the first is scored soon, the later ones, decoded while the
    model works, cost few extra prompt prefixes (one a chunk and anchor, where the family shares them)."""
    chunks, size, start = [], 2 * batch, 0
    while start < len(items):
        chunks.append(items[start:start + size])
        start, size = start + size, size * 2
    return chunks


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
