"""Concepts: free-text names, the five ConViS aliases, and weight parsing (paper Eq. 2)."""

from __future__ import annotations

import math
from dataclasses import dataclass

# The five ConViS-Bench concepts: CLI alias -> the words the LMM prompt uses.
CONVIS_CONCEPTS: dict[str, str] = {
    "main-action": "Main Action",
    "main-subjects": "Main Subjects",
    "main-objects": "Main Objects",
    "location": "Location",
    "order-of-actions": "Order Of Actions",  # as the reference prompt writes it
}

# Keys the released ConViS-Bench files use for the same concepts.
BENCH_KEYS: dict[str, str] = {
    "main-action": "MainAction",
    "main-subjects": "MainSubjects",
    "main-objects": "MainObjects",
    "location": "Location",
    "order-of-actions": "OrderOfActions",
}


class ConceptError(ValueError):
    """A --concept argument could not be parsed."""


@dataclass(frozen=True)
class Concept:
    key: str  # canonical slug: "location", "main-action", or a slug of free text
    words: str  # as written in the prompt: "Location", "Main Action", "camera angle"
    weight: float = 1.0


def slug(text: str) -> str:
    return "-".join(text.strip().lower().replace("_", " ").replace("-", " ").split())


def _lookup(name: str) -> tuple[str, str]:
    key = slug(name)
    # accept the bench spellings too: "MainAction", "Main_Action", "main action"
    compact = key.replace("-", "")
    for alias, words in CONVIS_CONCEPTS.items():
        if compact == alias.replace("-", ""):
            return alias, words
    if not key:
        raise ConceptError("empty concept name")
    return key, " ".join(name.strip().split())


def parse_concept(spec: str) -> Concept:
    """``location``, ``main-action=0.7`` or ``camera angle=2`` -> Concept."""
    name, sep, weight_text = spec.rpartition("=") if "=" in spec else (spec, "", "")
    weight = 1.0
    if sep:
        try:
            weight = float(weight_text)
        except ValueError:
            raise ConceptError(f"concept weight must be a number: {spec!r}") from None
        if not math.isfinite(weight) or weight < 0:
            raise ConceptError(f"concept weight must be a finite number >= 0: {spec!r}")
    key, words = _lookup(name)
    return Concept(key, words, weight)


def parse_concepts(specs: list[str] | tuple[str, ...]) -> list[Concept]:
    """Parse and normalise weights so they sum to 1 (paper Eq. 2: s = sum_c w_c s_c)."""
    concepts = [parse_concept(s) for s in specs]
    if not concepts:
        raise ConceptError("give at least one --concept")
    keys = [c.key for c in concepts]
    if len(set(keys)) != len(keys):
        raise ConceptError(f"a concept is given twice: {', '.join(keys)}")
    total = sum(c.weight for c in concepts)
    if total <= 0:
        raise ConceptError("concept weights sum to 0")
    return [Concept(c.key, c.words, c.weight / total) for c in concepts]


def combine(scores: dict[str, float | None], concepts: list[Concept]) -> float | None:
    """Weighted sum of per-concept scores with normalised weights (Eq. 2); None when a concept's score
    could not be read (an unreadable LMM answer), so such a pair ranks last instead of looking dissimilar."""
    if any(scores[c.key] is None for c in concepts):
        return None
    return float(sum(c.weight * scores[c.key] for c in concepts))
