"""What a query or a comparison answers: values built once, each stage making new ones.

A ``Hit`` is born at recall with the indexed signals' similarities; reranking and fusion
return new hits with their own scores (the earlier ones kept beside them where the user
sees both), and the rank is numbered when the final list is ordered.  ``as_dict`` is the
JSON the CLI and the API print.

Every score and total is on one scale, [0, 1] (``retrieval.core.concepts.from_rating``): an
LMM's 1-5 answer or a fused 1-5 prediction is kept beside its score as a ``rating``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Mapping

from rerankers.base import PairScore
from retrieval.core.concepts import RATING, Concept, combine, from_rating
from retrieval.search.calibration import NO_MATCH, Calibration
from retrieval.search.confidence import Spread, weaker, word
from retrieval.search.signals import scorer_label
from retrieval.store.catalog.records import UnitRow

CHANGE_KEY = "change"  # a composed query's change: its key among a hit's scores and ratings, beside the concepts


def _round(value: float | None, digits: int = 4) -> float | None:
    return None if value is None else round(value, digits)


def _rounded(scores: Mapping[str, float | None]) -> dict[str, float | None]:
    return {k: _round(v) for k, v in scores.items()}


def shown_path(path: str | Path, root: str | None) -> str:
    """How results name a file: relative to the index root when inside it (as hit paths are), else absolute."""
    absolute = Path(path).expanduser().resolve()
    if root is not None and absolute.is_relative_to(root):
        return absolute.relative_to(root).as_posix()
    return str(absolute)


def _concept_dict(concept: Concept) -> dict:
    return {"key": concept.key, "words": concept.words, "weight": round(concept.weight, 6)}


@dataclass(frozen=True)
class Hit:
    unit_id: int
    path: str
    segment: int
    start: float
    end: float
    scores: dict[str, float | None]  # concept key -> score in [0, 1] (a similarity, or a rating mapped to 0-1)
    total: float | None  # None when a reranker's answer could not be read (ranked last)
    content_hash: str | None = None
    rank: int = 0  # numbered when the final list is ordered
    recall_scores: dict[str, float] = field(default_factory=dict)  # before reranking
    contributions: dict[str, dict[str, float]] = field(default_factory=dict)  # fusion: concept -> signal -> 0-1 pts
    seen: dict[str, dict] = field(default_factory=dict)  # reranking: concept -> the frames the LMM was shown
    ratings: dict[str, float | None] = field(default_factory=dict)  # concept -> the 1-5 rating behind its score
    inputs: dict[str, dict[str, float]] = field(default_factory=dict)  # fusion: concept -> signal -> value given
    recall_total: float | None = None  # the total before reranking or fusion: orders hits whose totals tie
    evidence: dict[str, dict[str, float]] = field(default_factory=dict)  # recall: concept -> signal -> similarity
    recalled_by: tuple[str, ...] = ()  # the signals whose FAISS index proposed this unit
    composed: dict[str, float | None] = field(default_factory=dict)  # a change: its stay, change and weight
    keyword: dict = field(default_factory=dict)  # keyword/hybrid search: its keyword and vector ranks, matched terms
    lines: tuple[dict, ...] = ()  # text search: the unit's timed lines that hold a query word (``hit_lines``)
    rating_scale: str = RATING  # what ``ratings`` are: 1-5 answers, or a yes/no reranker's own P(yes)
    same_bytes_as: tuple[str, ...] = ()  # other files holding this file's bytes: their same span is this hit

    @classmethod
    def recalled(cls, unit: UnitRow, scores: dict[str, float], concepts: list[Concept],
                 evidence: dict[str, dict[str, float]] | None = None, recalled_by: tuple[str, ...] = ()) -> Hit:
        """A recalled unit scored by the indexed signals (``evidence``: what each concept's score rests on)."""
        return cls(unit.unit_id, unit.path, unit.segment, unit.start, unit.end, scores, combine(scores, concepts),
                   unit.content_hash, evidence=evidence or {}, recalled_by=recalled_by)

    def reranked(self, answers: Mapping[str, PairScore], concepts: list[Concept]) -> Hit:
        """This hit scored by the reranker's 1-5 answers (concept key -> answer), mapped to 0-1; the answers
        and the recall scores kept beside."""
        scores = {key: answer.unit_score for key, answer in answers.items()}
        scale = next((answer.scale for answer in answers.values()), RATING)
        return replace(self, scores=scores, rating_scale=scale, total=combine(scores, concepts),
                       recall_scores=dict(self.scores),
                       ratings={key: answer.score for key, answer in answers.items()}, recall_total=self.total,
                       seen={key: answer.evidence for key, answer in answers.items() if answer.evidence})

    def pair_scored(self, key: str, signal: str, value: float | None, concepts: list[Concept]) -> Hit:
        """This hit with concept ``key`` scored by a pair signal (VQAScore) instead of its recall signals; the
        recall scores kept beside. ``value`` None: the model's answer was unreadable (ranked last)."""
        scores = {**self.scores, key: value}
        return replace(self, scores=scores, total=combine(scores, concepts),
                       recall_scores=self.recall_scores or dict(self.scores),
                       recall_total=self.recall_total if self.recall_scores else self.total,
                       evidence={**self.evidence, key: {} if value is None else {signal: value}})

    def fused(self, ratings: dict[str, float], contributions: dict[str, dict[str, float]],
              inputs: dict[str, dict[str, float]], concepts: list[Concept]) -> Hit:
        """This hit with each fused concept's 1-5 prediction (``ratings``) as its 0-1 score, the 0-1
        ``contributions`` that add up to it, and the signal values the fusion was given."""
        scores = {**self.scores, **{key: from_rating(r) for key, r in ratings.items()}}
        earlier = self.recall_scores or dict(self.scores)
        return replace(self, scores=scores, total=combine(scores, concepts), contributions=contributions,
                       ratings={**self.ratings, **ratings}, inputs=inputs, recall_scores=earlier,
                       recall_total=self.recall_total if self.recall_scores else self.total)

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
            **({"ratings": _rounded(self.ratings)} if self.ratings else {}),
            **({"same_bytes_as": list(self.same_bytes_as)} if self.same_bytes_as else {}),
            **({"rating_scale": self.rating_scale} if self.ratings and self.rating_scale != RATING else {}),
            **({"inputs": {c: _rounded(values) for c, values in self.inputs.items()}} if self.inputs else {}),
            **({"evidence": {c: _rounded(parts) for c, parts in self.evidence.items()}} if self.evidence else {}),
            **({"recalled_by": list(self.recalled_by)} if self.recalled_by else {}),
            **({"composed": _rounded(self.composed)} if self.composed else {}),
            **{k: round(v, 6) if isinstance(v, float) else v for k, v in self.keyword.items()},
            **({"lines": list(self.lines)} if self.lines else {}),
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
    root: str | None = None  # the folder the index covers: hit paths (and an anchor inside it) are relative to it
    start: float | None = None  # the anchor's window in seconds (None: from its start, to its end)
    end: float | None = None
    empty_reason: str | None = None  # why there are no hits, when there are none
    change: dict | None = None  # a composed query: {"text", "weight", "signals"} (see retrieval.search.compose)
    most_different: bool = False  # ranked least similar first (StepDiff-style ranking by how much clips differ)
    beside: dict[str, str] = field(default_factory=dict)  # concept key -> its description signal, scoring it too
    pair_signals: dict[str, str] = field(default_factory=dict)  # concept key -> the pair signal (VQAScore) scoring it
    spread: Spread | None = None  # the totals of the pool the final scores were given to (search/confidence.py)
    ranges: dict[str, list[float]] = field(default_factory=dict)  # concept key -> [low, high] over that pool
    calibration: Calibration | None = None  # the index's background per hit (search/calibration.py); None: relative
    change_spread: Spread | None = None  # a change query's change scores over the pool: a hit is no stronger
    work: dict[str, int] | None = None  # the reranker's work for this query (vision calls, prefix passes, pair rows)

    def scored_by(self, key: str) -> str:
        """What gave a concept's scores: "fusion", the reranker's model id, or the indexed signals' model ids
        (its own, and its description signal beside it: "dinov2:... + text:...#location")."""
        if any(key in hit.contributions for hit in self.hits):
            return "fusion"
        if self.reranker is None and key in self.pair_signals:
            return self.pair_signals[key]
        return self.reranker or self.recall_signals(key)

    def recall_signals(self, key: str) -> str:
        """The indexed signals a concept's recall similarity is the mean of: its own, and its description's."""
        return " + ".join([self.signals[key], *([self.beside[key]] if key in self.beside else [])])

    def label(self, key: str) -> str:
        """``scored_by(key)`` in short names, as every surface shows it: ``efficientnet-lite0 + text#location``."""
        return scorer_label(self.scored_by(key))

    @property
    def how_scored(self) -> str:
        """One line for every surface's header: ``recall similarity (location: efficientnet-lite0 +
        text#location)``; with a reranker or fusion, it and the recall signals it started from."""
        how = " + ".join(x for x in (self.reranker, self.fusion and f"fusion {self.fusion}") if x)
        if how:
            return f"{how} (recall: " + ", ".join(f"{c.key}: {scorer_label(self.recall_signals(c.key))}"
                                                  for c in self.concepts) + ")"
        return "recall similarity (" + ", ".join(f"{c.key}: {self.label(c.key)}" for c in self.concepts) + ")"

    def as_dict(self) -> dict:
        text = getattr(self, "text", None)  # a search: the sentence is no anchor clip
        return {
            "root": self.root,
            # the key stays (convis export reads results written before "query"), null for a search
            "anchor": None if text else self.anchor,
            "query": text or self.anchor,
            "start": _round(self.start, 3),
            "end": _round(self.end, 3),
            "concepts": [{**_concept_dict(c), "signal": self.signals[c.key],
                          **({"description_signal": self.beside[c.key]} if c.key in self.beside else {}),
                          **({"pair_signal": self.pair_signals[c.key]} if c.key in self.pair_signals else {}),
                          "scored_by": self.scored_by(c.key), "scored_by_label": self.label(c.key)}
                         for c in self.concepts],
            "scored_by": self.how_scored,
            "signals": self.signals,
            "reranker": self.reranker,
            **({"work": self.work} if self.work is not None else {}),
            "fusion": self.fusion,
            "notices": self.notices,
            "empty_reason": self.empty_reason,
            **({"change": self.change} if self.change is not None else {}),
            "order": "most different first" if self.most_different else "most similar first",
            "spread": None if self.spread is None else self.spread.as_dict(),
            "ranges": self.ranges,
            "calibration": None if self.calibration is None else self.calibration.as_dict(),
            "no_match": self.no_match, "no_match_note": NO_MATCH if self.no_match else None,
            "hits": [{**h.as_dict(), **self._confidence(h)} for h in self.hits],
        }

    @property
    def no_match(self) -> bool:
        """The best hit is weak: it scores as unrelated clips do (against the index's background), or stands out
        from nothing (the relative rule; a change query: its change score does not)."""
        return bool(self.hits) and self.confidence(self.hits[0]) == word(0)

    def confidence(self, hit: Hit) -> str | None:
        """``hit``'s label: against the index's background when there is one, else the relative rule's."""
        return self._confidence(hit).get("confidence")

    def _confidence(self, hit: Hit) -> dict:
        if self.calibration is not None:
            return self.calibration.hit_dict(hit.unit_id, hit.total)
        z = None if self.spread is None else self.spread.z(hit.total)
        if z is None:
            return {}
        label = self.spread.label(hit.total)
        if self.change_spread is not None:  # staying alike alone is no match for a change nothing shows
            label = weaker(label, self.change_spread.label(hit.composed.get("change")))
        return {"confidence": label, "z": round(z, 2)}


@dataclass(frozen=True)
class ConceptScore:
    """One concept's score for a pair in [0, 1] (None when unreadable). From an LMM: its 1-5 answer
    (``rating``), its own token, P(1..5) in expected mode, and the frames each clip showed; from the index:
    the signal (indexer model id) that scored it."""

    concept: Concept
    score: float | None
    raw: str = ""
    probs: tuple[float, ...] | None = None
    seen: dict | None = None
    rating: float | None = None
    signal: str | None = None
    scored_by: str = ""  # the model id, or the signals the score is the mean of (``QueryResult.scored_by``)
    scale: str = RATING  # what ``rating`` is: a 1-5 answer, or a yes/no reranker's own P(yes)

    @classmethod
    def answered(cls, concept: Concept, answer: PairScore, reranker: str) -> ConceptScore:
        return cls(concept, answer.unit_score, answer.raw, answer.probs, answer.evidence, answer.score,
                   scored_by=reranker, scale=answer.scale)

    @property
    def label(self) -> str:
        return scorer_label(self.scored_by)

    def as_dict(self) -> dict:
        by = {"scored_by": self.scored_by, "scored_by_label": self.label}
        if self.signal is not None:
            return {**_concept_dict(self.concept), "score": _round(self.score), "signal": self.signal, **by}
        scale = {"rating_scale": self.scale} if self.scale != RATING else {}
        return {**_concept_dict(self.concept), "score": _round(self.score), "rating": self.rating, **scale,
                "raw": self.raw, "probs": self.probs, "seen": self.seen, **by}


@dataclass(frozen=True)
class Answerer:
    """Who answered a comparison: the reranker's model id, how its rating is read, and whether both orders
    of the pair were asked."""

    reranker: str
    mode: str
    symmetric: bool


@dataclass(frozen=True)
class CompareResult:
    """The per-concept similarity of one pair of clips, from a reranker or from the index's signals, and
    their Eq. 2 combination."""

    a: str
    b: str
    reranker: str | None  # the reranker's model id; None when the index's signals scored the pair
    mode: str | None
    symmetric: bool
    concepts: tuple[ConceptScore, ...]
    total: float | None
    model_pairs: int  # pairs the model was asked (the rest came from the score cache)
    notices: tuple[str, ...] = ()
    rank: int | None = None  # by signals: b's rank in the query for a
    b_start: float | None = None  # by signals: the unit of b that was scored (an LMM sees whole files)
    b_end: float | None = None
    root: str | None = None  # the index's folder when there is one: a and b inside it are relative to it
    signals_by: str | None = None  # by signals: the query's ``how_scored``, word for word
    confidence: str | None = None  # by signals: b's label in the query for a (search/confidence.py's words)

    @classmethod
    def answered(cls, a: str, b: str, by: Answerer, concepts: list[Concept], answers: Mapping[str, PairScore],
                 model_pairs: int, notices: tuple[str, ...], root: str | None = None) -> CompareResult:
        """From the answers per concept key."""
        rows = tuple(ConceptScore.answered(c, answers[c.key], by.reranker) for c in concepts)
        total = combine({row.concept.key: row.score for row in rows}, concepts)
        return cls(a, b, by.reranker, by.mode, by.symmetric, rows, total, model_pairs, notices, root=root)

    @classmethod
    def from_query(cls, a: str, b: str, result: QueryResult, hit: Hit) -> CompareResult:
        """b's scores in a query for a: exactly what that query shows for it."""
        rows = tuple(ConceptScore(c, hit.scores[c.key], signal=result.pair_signals.get(c.key, result.signals[c.key]),
                                  scored_by=result.scored_by(c.key)) for c in result.concepts)
        return cls(a, b, None, None, False, rows, hit.total, 0, tuple(result.notices), hit.rank, hit.start, hit.end,
                   result.root, result.how_scored, result.confidence(hit))

    @property
    def scored_by(self) -> str:
        """The reranker's model id, or what scored each concept, as the query for a says it."""
        return self.reranker or self.signals_by or ""

    def as_dict(self) -> dict:
        return {
            "root": self.root, "a": self.a, "b": self.b,
            "reranker": self.reranker, "mode": self.mode, "symmetric": self.symmetric,
            "scored_by": self.scored_by, "concepts": [row.as_dict() for row in self.concepts],
            "total": _round(self.total), "model_pairs": self.model_pairs, "notices": list(self.notices),
            "rank": self.rank, "b_start": _round(self.b_start, 3), "b_end": _round(self.b_end, 3),
            "confidence": self.confidence,
        }
