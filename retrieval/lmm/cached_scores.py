"""What the scorers ask of a score cache: an answer kept under its key, and keeping one.

The scorers (``similarity``, ``vqascore``, ``differences``) are handed a cache by their caller; the one convis
keeps is ``retrieval.store.caches.scores.ScoreCache`` (a DuckDB file beside the index), which this package does not
import: the store and the LMMs are independent rooms.
"""

from __future__ import annotations

from typing import Protocol

from rerankers.base import PairScore


class CachedScores(Protocol):
    """Answers keyed by the model's identity for the task (``tag``: the reranker's ``cache_tag``, which says whether
    anchor sharing was on, so a shared score never answers an unshared request), what was asked (``concept``: a
    concept, or a digest of the question), the scoring mode and both clips (``a``, ``b``: content hashes and spans)."""

    def get(self, tag: str, concept: str, mode: str, a: str, b: str) -> PairScore | None: ...

    def put(self, tag: str, concept: str, mode: str, a: str, b: str, score: PairScore) -> None: ...
