"""What a query or a comparison answers: values built once, each stage making new ones.

A ``Hit`` is born at recall with the indexed signals' similarities; reranking and fusion
return new hits with their own scores (the earlier ones kept beside them where the user
sees both), and the rank is numbered when the final list is ordered.  ``as_dict`` is the
JSON the CLI and the API print.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Mapping

from rerankers.base import PairScore
from retrieval.core.concepts import Concept, combine
from retrieval.store.catalog import UnitRow


def _rounded(scores: Mapping[str, float | None]) -> dict[str, float | None]:
    return {k: None if v is None else round(v, 4) for k, v in scores.items()}


def _concept_dict(concept: Concept) -> dict:
    return {"key": concept.key, "words": concept.words, "weight": round(concept.weight, 6)}


@dataclass(frozen=True)
class Hit:
    unit_id: int
    path: str
    segment: int
    start: float
    end: float
    scores: dict[str, float | None]  # concept key -> similarity in [0, 1], or the reranker's 1-5
    total: float | None  # None when a reranker's answer could not be read (ranked last)
    content_hash: str | None = None
    rank: int = 0  # numbered when the final list is ordered
    recall_scores: dict[str, float] = field(default_factory=dict)  # before reranking
    contributions: dict[str, dict[str, float]] = field(default_factory=dict)  # fusion: concept -> signal -> pts
    seen: dict[str, dict] = field(default_factory=dict)  # reranking: concept -> the frames the LMM was shown

    @classmethod
    def recalled(cls, unit: UnitRow, scores: dict[str, float], concepts: list[Concept]) -> Hit:
        """A recalled unit scored by the indexed signals."""
        return cls(unit.unit_id, unit.path, unit.segment, unit.start, unit.end, scores, combine(scores, concepts),
                   unit.content_hash)

    def reranked(self, answers: Mapping[str, PairScore], concepts: list[Concept]) -> Hit:
        """This hit scored by the reranker's answers (concept key -> answer); recall scores kept beside."""
        scores = {key: answer.score for key, answer in answers.items()}
        return replace(self, scores=scores, total=combine(scores, concepts), recall_scores=dict(self.scores),
                       seen={key: answer.evidence for key, answer in answers.items() if answer.evidence})

    def fused(self, scores: dict[str, float | None], contributions: dict[str, dict[str, float]],
              concepts: list[Concept]) -> Hit:
        """This hit scored by the fusion model, with each fused concept's contributions."""
        return replace(self, scores=scores, total=combine(scores, concepts), contributions=contributions)

    def as_dict(self) -> dict:
        return {
            "rank": self.rank, "path": self.path, "segment": self.segment,
            "start": round(self.start, 3), "end": round(self.end, 3),
            "scores": _rounded(self.scores),
            "total": None if self.total is None else round(self.total, 4),
            **({"recall_scores": {k: round(v, 4) for k, v in self.recall_scores.items()}}
               if self.recall_scores else {}),
            **({"contributions": {c: {s: round(v, 4) for s, v in parts.items()}
                                  for c, parts in self.contributions.items()}} if self.contributions else {}),
            **({"seen": self.seen} if self.seen else {}),
        }


@dataclass(frozen=True)
class QueryResult:
    anchor: str
    concepts: list[Concept]
    signals: dict[str, str]  # concept key -> indexer model id used for recall scores
    hits: list[Hit]
    notices: list[str] = field(default_factory=list)
    reranker: str | None = None  # the reranker's model id
    fusion: str | None = None  # the fusion weights: a file, "default", or "model"

    def as_dict(self) -> dict:
        return {
            "anchor": self.anchor,
            "concepts": [_concept_dict(c) for c in self.concepts],
            "signals": self.signals,
            "reranker": self.reranker,
            "fusion": self.fusion,
            "notices": self.notices,
            "hits": [h.as_dict() for h in self.hits],
        }


@dataclass(frozen=True)
class ConceptScore:
    """One concept's answer for a pair: 1-5 (None when unreadable), the model's own token, P(1..5) in
    expected mode, and the frames each clip showed."""

    concept: Concept
    score: float | None
    raw: str = ""
    probs: tuple[float, ...] | None = None
    seen: dict | None = None

    @classmethod
    def answered(cls, concept: Concept, answer: PairScore) -> ConceptScore:
        return cls(concept, answer.score, answer.raw, answer.probs, answer.evidence)

    def as_dict(self) -> dict:
        return {**_concept_dict(self.concept), "score": self.score, "raw": self.raw, "probs": self.probs,
                "seen": self.seen}


@dataclass(frozen=True)
class CompareResult:
    """The reranker's per-concept similarity of one pair of clips, and their Eq. 2 combination."""

    a: str
    b: str
    reranker: str  # the reranker's model id
    mode: str
    symmetric: bool
    concepts: tuple[ConceptScore, ...]
    total: float | None
    model_pairs: int  # pairs the model was asked (the rest came from the score cache)
    notices: tuple[str, ...] = ()

    @classmethod
    def answered(cls, a: str, b: str, reranker: str, mode: str, symmetric: bool, concepts: list[Concept],
                 answers: Mapping[str, PairScore], model_pairs: int, notices: tuple[str, ...]) -> CompareResult:
        """From the answers per concept key."""
        rows = tuple(ConceptScore.answered(c, answers[c.key]) for c in concepts)
        total = combine({c.key: answers[c.key].score for c in concepts}, concepts)
        return cls(a, b, reranker, mode, symmetric, rows, total, model_pairs, notices)

    def as_dict(self) -> dict:
        return {
            "a": self.a, "b": self.b, "reranker": self.reranker, "mode": self.mode, "symmetric": self.symmetric,
            "concepts": [row.as_dict() for row in self.concepts],
            "total": self.total, "model_pairs": self.model_pairs, "notices": list(self.notices),
        }
