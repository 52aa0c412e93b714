"""Composed queries: clips like the anchor, but changed as a sentence says ("a cup instead of a box").

The request is TF-CoVR's (composed video retrieval): a reference video and a modification text. convis
answers it zero-shot with the signals the index already has:

* **Change signals**: every indexed signal with a text tower reads the change text: CLIP-family models
  against the units' visual vectors, the text indexer against their captions and each concept's descriptions
  (when the index holds them). A unit's *change* score is the mean of its (cos + 1) / 2 similarities to the
  change text over the change signals it has a vector of.
* **Stay score**: the unit's ordinary query score for the concepts that must stay the same (``--concept``;
  without one, the five ConViS concepts equally weighted), as a query without a change computes it.
* **Total** = (stay + w * change) / (1 + w), ``w`` = the change weight (default 1): each hit shows both parts.
* **Edited texts**: the anchor's caption and concept descriptions, edited as the change says
  (``change_reading.edit``), are what the stay term compares in their text signals (the anchor as changed);
  the edited descriptions of the concepts the change touched are also change queries: they join the mean.
* **Recall**: the union of the anchor's own top lists (as a query), the change text's and each edited text's
  top list in its signal, and, for each CLIP-family signal, the top list of the composed query vector
  ``normalise(v / |v| + w * t / |t|)`` (the anchor's video vector plus the change's text vector, the
  zero-shot baseline of composed retrieval). The anchor itself is never returned (TF-CoVR masks it).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Callable

import numpy as np

from indexers.text_towers import TextEncoder
from rerankers.prompts.similarity import ChangeWords
from retrieval.core.concepts import Concept, combine
from retrieval.core.scores import unit_similarity
from retrieval.search import ranking
from retrieval.search.results import CHANGE_KEY, Hit
from retrieval.search.signals import SignalError
from retrieval.search.text_query import MAX_TEXT_CHARS, NoTextSignal, text_signals
from retrieval.store.vectors.policy import RecallIndex

DEFAULT_CHANGE_WEIGHT = 1.0


class ChangeError(SignalError):
    """A change the query cannot make: empty or overlong text, a bad weight, or no signal that reads text."""


@dataclass(frozen=True)
class Change:
    """How the wanted clips differ from the anchor, in words, and how much that counts against staying alike."""

    text: str
    weight: float = DEFAULT_CHANGE_WEIGHT

    def __post_init__(self) -> None:
        text = " ".join(str(self.text).split())
        if not text:
            raise ChangeError("--change needs a text, e.g. --change \"a cup instead of a box\"")
        if len(text) > MAX_TEXT_CHARS:
            raise ChangeError(f"--change is {len(text)} characters long; at most {MAX_TEXT_CHARS} are read")
        if not np.isfinite(self.weight) or self.weight <= 0:
            raise ChangeError(f"the change weight must be a number > 0, not {self.weight}")
        object.__setattr__(self, "text", text)

    def combine(self, stay: float, change: float | None) -> float:
        """The total of a hit: (stay + w * change) / (1 + w); no change vector counts as no match (0)."""
        return (stay + self.weight * (change or 0.0)) / (1.0 + self.weight)


def composed_vector(video: np.ndarray, text: np.ndarray, weight: float) -> np.ndarray:
    """``normalise(v / |v| + weight * t / |t|)``: the anchor's video vector moved toward the change's text."""
    v = np.asarray(video, np.float32).ravel()
    t = np.asarray(text, np.float32).ravel()
    q = v / max(np.linalg.norm(v), 1e-12) + weight * t / max(np.linalg.norm(t), 1e-12)
    return (q / max(np.linalg.norm(q), 1e-12)).astype(np.float32)


@dataclass(frozen=True)
class ChangeQuery:
    """The change made ready against one index: its text vector in every change signal (model id -> vector)
    and the composed vectors of the CLIP-family ones (model id -> vector)."""

    change: Change
    text_vectors: dict[str, np.ndarray]
    composed: dict[str, np.ndarray]
    notices: list[str]
    edited: dict[str, np.ndarray] = field(default_factory=dict)  # signal -> the anchor's edited text's vector
    changing: tuple[str, ...] = ()  # the signals of the touched concepts' edited descriptions: change queries

    @classmethod
    def prepare(cls, change: Change, indexed: dict[str, str], build: Callable[[str], TextEncoder],
                anchor_vector: Callable[[str], np.ndarray | None],
                described: dict[str, str] | None = None, edited: dict[str, str] | None = None,
                changing: tuple[str, ...] = ()) -> "ChangeQuery":
        """Embed the change with every indexed signal that reads text (``indexed``: name -> model id);
        ``anchor_vector(model_id)`` gives the anchor's visual vector of a CLIP-family model; ``described``
        (concept -> description signal) adds each concept's descriptions, which the text indexer embedded;
        ``edited`` (signal of the text indexer's -> the anchor's text there, edited as the change says): what the
        stay term compares in that signal, and, for the ``changing`` signals (touched concepts' descriptions), a
        query of the change score beside the change text."""
        try:
            answering, notices = text_signals(indexed, build)
        except NoTextSignal as exc:
            raise ChangeError(f"--change needs a signal that reads text: {str(exc).split(': ', 1)[-1]}") from None
        text_vectors = {m.model_id: np.asarray(m.embed_texts([change.text])[0], np.float32)
                        for m in answering.values()}
        in_text = text_vectors.get(indexed.get("text", ""))
        if in_text is not None:  # descriptions live in the text indexer's space: its vector of the change reads them
            text_vectors.update({signal: in_text for signal in (described or {}).values()})
        reader = answering.get("text")
        edited_vectors = {}
        if reader is not None and edited:
            vectors = reader.embed_texts(list(edited.values()))
            edited_vectors = {signal: np.asarray(v, np.float32) for signal, v in zip(edited, vectors, strict=True)}
        composed = {}
        for model in answering.values():
            if model.kind == "text":
                continue  # captions: there is no anchor video vector in their space to move
            video = anchor_vector(model.model_id)
            if video is not None:
                composed[model.model_id] = composed_vector(video, text_vectors[model.model_id], change.weight)
        return cls(change, text_vectors, composed, notices, edited_vectors,
                   tuple(m for m in changing if m in edited_vectors))

    def recall(self, indices: Callable[[str], RecallIndex], k: int,
               allowed: np.ndarray | None = None) -> dict[int, list[str]]:
        """Unit id -> the change signals that proposed it: the change text's and the composed vectors' top ``k``
        (of the ``allowed`` units only, when given)."""
        found = ranking.recall(self.text_vectors, {m: indices(m) for m in self.text_vectors}, k, allowed=allowed)
        for unit, by in ranking.recall(self.composed, {m: indices(m) for m in self.composed}, k,
                                       allowed=allowed).items():
            found.setdefault(unit, []).extend(f"{m}+change" for m in by)
        for unit, by in ranking.recall(self.edited, {m: indices(m) for m in self.edited}, k, allowed=allowed).items():
            found.setdefault(unit, []).extend(f"{m}+edited" for m in by)
        return found

    def scores(self, candidates: list[int], stored: dict[str, ranking.StoredVectors]) -> dict[int, float]:
        """Each candidate's change score: the mean (cos + 1) / 2 to the change text over the change signals it
        has a vector of, and to each touched concept's edited description in its signal (absent: none)."""
        ids = np.array(candidates, dtype=np.int64)
        if not len(ids):
            return {}
        queries = [*self.text_vectors.items(), *((m, self.edited[m]) for m in self.changing)]
        per_signal = np.stack([unit_similarity(stored[m].vectors(ids) @ t) for m, t in queries])
        known = np.isfinite(per_signal)
        counts = known.sum(axis=0)
        means = np.where(known, per_signal, 0.0).sum(axis=0) / np.maximum(counts, 1)
        return {int(u): float(means[i]) for i, u in enumerate(ids) if counts[i]}

    def as_changed(self, anchors: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """The anchor's vectors that the stay term compares with: in a text signal where the anchor's text was
        edited, the edited text's vector (what should stay is the anchor as changed, not the words replaced)."""
        return {m: self.edited.get(m, v) for m, v in anchors.items()}

    @property
    def question(self) -> Concept:
        """What a reranker is asked besides the concepts: how well the candidate shows the anchor changed so."""
        return Concept(CHANGE_KEY, ChangeWords(self.change.text), 1.0)

    def reranked(self, hits: list[Hit], concepts: list[Concept]) -> list[Hit]:
        """Hits a reranker scored on ``concepts`` and on ``question``: stay = the concepts' Eq. 2 total of its
        ratings, change = its rating of the change (each (r - 1) / 4); best first."""
        out = []
        for hit in hits:
            change = hit.scores.get(CHANGE_KEY)
            stay = combine({c.key: hit.scores[c.key] for c in concepts}, concepts)
            total = None if stay is None or change is None else self.change.combine(stay, change)
            out.append(replace(hit, scores={c.key: hit.scores[c.key] for c in concepts}, total=total,
                               composed={"stay": stay, "change": change, "weight": self.change.weight}))
        return ranking.best_first(out)

    def rescore(self, hits: list[Hit], scores: dict[int, float]) -> list[Hit]:
        """``hits`` (scored by staying like the anchor) with the change's part added, best first."""
        out = []
        for hit in hits:
            stay, change = hit.total, scores.get(hit.unit_id)
            if stay is None:
                out.append(hit)
                continue
            out.append(replace(hit, total=self.change.combine(stay, change), recall_total=stay,
                               composed={"stay": stay, "change": change, "weight": self.change.weight}))
        return ranking.best_first(out)
