"""Pair signals in a query: a concept scored by a model asked about each (anchor, candidate) pair (VQAScore).

Such a signal cannot recall (it has no vectors), so the concept is recalled by its vector signal and the
shortlist is scored by the pair signal, which then is the concept's score; the recall score stays beside it.
A candidate without a caption has no VQAScore and ranks last, as an unreadable LMM answer does.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from retrieval.core.concepts import Concept
from retrieval.lmm.clips import ClipRef
from retrieval.lmm.vqascore import Captioned, VqaScorer
from retrieval.search.results import Hit


@dataclass
class PairSignals:
    anchor: ClipRef
    anchor_caption: str | None
    captions: dict[int, str]  # unit id -> its caption
    concepts: list[Concept]
    used: dict[str, str] = field(default_factory=dict)  # concept key -> the pair signal that scored it
    values: dict[int, dict[str, float | None]] = field(default_factory=dict)  # unit id -> signal -> value
    uncaptioned: int = 0  # candidates left without a score: they have no caption

    def score(self, hits: list[Hit], key: str, signal: str, scorer: VqaScorer, root: Path) -> list[Hit]:
        """``hits`` with concept ``key`` scored by ``signal`` (each pair asked once, whichever concepts use it)."""
        todo = [h for h in hits if h.unit_id in self.captions and signal not in self.values.get(h.unit_id, {})]
        pairs = [(Captioned(self.anchor, self.anchor_caption or ""),
                  Captioned(ClipRef(str(root / h.path), h.content_hash, h.start, h.end), self.captions[h.unit_id]))
                 for h in todo]
        for hit, value in zip(todo, scorer.score(pairs) if pairs else [], strict=False):
            self.values.setdefault(hit.unit_id, {})[signal] = value
        self.used[key] = signal
        self.uncaptioned = sum(h.unit_id not in self.captions for h in hits)
        return [h.pair_scored(key, signal, self.values.get(h.unit_id, {}).get(signal), self.concepts) for h in hits]

    def with_values(self, sims: dict[int, dict[str, float]]) -> dict[int, dict[str, float]]:
        """``sims`` (unit id -> signal -> similarity) with the pair signals' values added: fusion inputs."""
        merged = {u: dict(per) for u, per in sims.items()}
        for unit, per in self.values.items():
            merged.setdefault(unit, {}).update({s: v for s, v in per.items() if v is not None})
        return merged
