"""Concepts: free-text names, the five ConViS aliases, weight parsing (paper Eq. 2) and the one score scale.

A name is one of the five ConViS concepts when it spells one up to case, spaces, hyphens and underscores
("Main_Action", "main action"). Any other name is free text, asked about as written ("camera angle"),
unless it is close to a ConViS name ("locaton"): that is refused as a likely typo, with the name it is
close to, unless free text is asked for explicitly.
"""

from __future__ import annotations

import difflib
import math
from dataclasses import dataclass
from typing import Iterable, Mapping

from retrieval.core.defaults import MAX_CONCEPT_WEIGHT, MIN_CONCEPT_WEIGHT
from retrieval.core.errors import ConvisError
from retrieval.core.ranges import in_range

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


# How close (difflib ratio of the names without separators) a free-text name may come to a ConViS name before
# it is taken for a typo: "locaton" (0.93), "main subject" (0.96) and "subjects" (0.80) are; "motion" (0.71),
# "action" (0.75) and "camera angle" are not.
TYPO_CUTOFF = 0.8
FREE_TEXT_FLAG = "--free-text"


class ConceptError(ConvisError, ValueError):
    """A --concept argument could not be parsed."""

    exit_code, http_status = 2, 400


class CloseToConcept(ConceptError):
    """A name that is no ConViS concept but close to one: a likely typo, free text only when asked for."""

    def __init__(self, name: str, match: str):
        self.name, self.match = name, match
        super().__init__(self.saying(f"use {FREE_TEXT_FLAG}"))

    def saying(self, opt_in: str) -> str:
        """The one-line message, with ``opt_in`` telling how to ask for the name as written."""
        return f"unknown concept {self.name!r}; did you mean {self.match}? ({opt_in} to ask for it as written)"

    def public(self, remedies: Mapping[str, str] | None = None) -> str:
        """Worded with the face's own way to ask for free text (``remedies["free_text"]``), the CLI's flag without."""
        opt_in = (remedies or {}).get("free_text")
        return str(self) if opt_in is None else self.saying(opt_in)


@dataclass(frozen=True)
class Concept:
    key: str  # canonical slug: "location", "main-action", or a slug of free text
    words: str  # as written in the prompt: "Location", "Main Action", "camera angle"
    weight: float = 1.0


def slug(text: str) -> str:
    return "-".join(text.strip().lower().replace("_", " ").replace("-", " ").split())


def _compact(text: str) -> str:
    return slug(text).replace("-", "")


def _lookup(name: str, free_text: bool) -> tuple[str, str]:
    key = slug(name)
    # accept the bench spellings too: "MainAction", "Main_Action", "main action"
    by_compact = {_compact(alias): alias for alias in CONVIS_CONCEPTS}
    alias = by_compact.get(key.replace("-", ""))
    if alias is not None:
        return alias, CONVIS_CONCEPTS[alias]
    if not key:
        raise ConceptError("empty concept name")
    match = closest(name, CONVIS_CONCEPTS)
    if match is not None and not free_text:
        raise CloseToConcept(" ".join(name.strip().split()), match)
    return key, " ".join(name.strip().split())


def closest(name: str, names: Iterable[str]) -> str | None:
    """The one of ``names`` that ``name`` is a likely typo of (spelled alike, up to case, spaces, hyphens and
    underscores, by ``TYPO_CUTOFF``), or None."""
    by_compact = {_compact(n): n for n in names}
    close = difflib.get_close_matches(_compact(name), by_compact, n=1, cutoff=TYPO_CUTOFF)
    return by_compact[close[0]] if close else None


def parse_concept(spec: str, free_text: bool = False) -> Concept:
    """``location``, ``main-action=0.7`` or ``camera angle=2`` -> Concept; a name close to a ConViS concept
    but not one is refused (CloseToConcept) unless ``free_text``."""
    name, sep, weight_text = spec.rpartition("=") if "=" in spec else (spec, "", "")
    weight = 1.0
    if sep:
        try:
            weight = float(weight_text)
        except ValueError:
            raise ConceptError(f"concept weight must be a number: {spec!r}") from None
        if not in_range(weight, MIN_CONCEPT_WEIGHT, MAX_CONCEPT_WEIGHT):
            raise ConceptError(f"concept weight must be a number from {MIN_CONCEPT_WEIGHT:g} to "
                               f"{MAX_CONCEPT_WEIGHT:g}: {spec!r}")
    key, words = _lookup(name, free_text)
    return Concept(key, words, weight)


def parse_concepts(specs: list[str] | tuple[str, ...], free_text: bool = False) -> list[Concept]:
    """Parse and normalise weights so they sum to 1 (paper Eq. 2: s = sum_c w_c s_c)."""
    concepts = [parse_concept(s, free_text) for s in specs]
    if not concepts:
        raise ConceptError("give at least one --concept")
    keys = [c.key for c in concepts]
    if len(set(keys)) != len(keys):
        raise ConceptError(f"a concept is given twice: {', '.join(keys)}")
    return [Concept(c.key, c.words, w) for c, w in zip(concepts, normalise([c.weight for c in concepts]), strict=False)]


def normalise(weights: list[float]) -> list[float]:
    """Positive finite weights scaled to sum to 1.  Divided by the largest first, so that weights near the
    float limit (1e308 + 1e308 overflows to inf) or near 0 keep their proportions: 1e308/1e308 is 0.5/0.5."""
    largest = max(weights)
    scaled = [w / largest for w in weights]
    total = math.fsum(scaled)  # in [1, len(weights)]: never 0, never inf
    return [w / total for w in scaled]


def combine(scores: dict[str, float | None], concepts: list[Concept]) -> float | None:
    """Weighted sum of per-concept scores with normalised weights (Eq. 2); None when a concept's score
    could not be read (an unreadable LMM answer), so such a pair ranks last instead of looking dissimilar."""
    if any(scores[c.key] is None for c in concepts):
        return None
    return float(sum(c.weight * scores[c.key] for c in concepts))


# One scale for every score that is shown or combined: [0, 1]. Indexed signals are (cos + 1) / 2 already; an
# LMM's answer and a fused prediction are ratings on the ConViS 1-5 scale, mapped linearly by (r - 1) / 4 so
# that Eq. 2 never adds a 1-5 score to a 0-1 one. Being linear, the map keeps a reranked query's order and
# the paper's 1-5 answers stay recoverable (r = 1 + 4 s).
RATING_SPAN = 4.0  # 5 - 1
RATING = "1-5"  # the scale of the paper's answers (a reranker with its own, P(yes), names it instead)


def from_rating(rating: float | None) -> float | None:
    """A 1-5 rating on the 0-1 scale (None, an unreadable answer, stays None)."""
    return None if rating is None else (rating - 1.0) / RATING_SPAN
