"""Confidence that means the same across queries: a hit's total read against what unrelated clips score.

The reference (the *background*) depends on what the query compares:

- A clip with clips (``query``): the signal's unit-pair background, kept at index time
  (``retrieval.store.backgrounds``): the similarity of random pairs of distinct units of this index.  An anchor is
  a unit like any other, in the same space, so "this anchor against an unrelated unit" is drawn from exactly that
  distribution, and it is the same for every query: a label means the same whichever clip asked.
- A sentence with descriptions (``search`` by the caption text indexer, or ``--concept``): the sentence and a
  unit's description are both sentences embedded by one text model, so the unit-pair background of that
  description signal (one unit's description against another's) is again the right reference.  A sentence's own
  scores would not do: its best hit always stands out among them ("a hand holding a cup" puts box.mp4 far above
  the street scenes, though box's caption is no closer to the sentence than two random captions are to each
  other).  Short queries score a little lower against captions than captions against each other, so this errs
  towards "weak", never towards "strong".
- A sentence with video vectors (a CLIP-family text tower against its image vectors): text and video vectors sit
  far apart in that space (its modality gap), so video-video pairs say nothing about where a sentence's scores lie.
  The background is the sentence's own similarity to a seeded random sample of up to ``SENTENCE_SAMPLE`` units
  (computed at query time from the stored vectors, never the recalled ones, which are the top of the list).

Cut points.  Random pairs include related ones (two takes of one scene, neighbouring units of a file): in the
example clips 6 of 36 pairs are one camera's four takes of a square, and they make the background's upper
quantiles (its 90th percentile is 0.986 for EfficientNet).  So the cuts are read from the background's bulk,
which stays the unrelated pairs' while fewer than a quarter of pairs are related: centre ``q50``, scale
``(q75 - q50) / 0.6745`` (a normal's upper quartile in sigmas), **strong** from ``q50 + 2.326 sigma`` (where a
normal's 99th percentile lies: above 99 in 100 unrelated pairs), **likely** from ``q50 + 1.282 sigma`` (its 90th),
**weak** below: the words of ``confidence.WORDS``, shared by every mode.  A query whose best hit is weak gets
``no_match``: "no clip matches this well; closest shown".  A most-different query reads the lower side the same
way (scale ``(q50 - q25) / 0.6745``): **strong** (as different as 99 in 100 unrelated pairs are not) at or below
the 1st percentile, **likely** at or below the 10th, **weak** above.

A total combines concepts (Eq. 2 weights) and a concept's signals (their mean); its cuts are the same combination
of each signal's cuts: where the total would sit if every signal sat at its own cut.

Limits: scores a reranker, a fusion model or VQAScore gave, and a change query's totals, are not similarities of
the kind a background is drawn of; they keep the relative rule of ``confidence.py``, as does an index without
backgrounds, with a notice saying so.  In a very large index an unrelated anchor's best neighbour can still pass
the 99th percentile of unrelated pairs (the most alike of a million is rare by construction); the labels say how
unusual one pair is, not how many such pairs to expect.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

import numpy as np

from retrieval.core.concepts import Concept
from retrieval.search.confidence import NOTHING_GOOD, word
from retrieval.store.catalog.records import BackgroundRow

Z90, Z99 = 1.2816, 2.3263  # a normal's 90th and 99th percentiles, in sigmas
QUARTILE_SIGMA = 0.6745  # a normal's upper quartile, in sigmas
MIN_SAMPLE = 10  # fewer pairs (or sampled units) than this give no quartiles worth reading
SENTENCE_SAMPLE = 2000  # units a sentence is compared with for its own background
NO_MATCH = NOTHING_GOOD
RULE = ("against the index's background (what unrelated clips score): strong from its median + 2.326 sigma (above "
        "99 in 100 unrelated pairs), likely from median + 1.282 sigma (90 in 100), else weak; sigma from its upper "
        "quartile")
RULE_DIFFERENT = ("against the index's background (what unrelated clips score), as different: strong at or below "
                  "its median - 2.326 sigma (below 99 in 100 unrelated pairs), likely at or below median - 1.282 "
                  "sigma, else weak; sigma from its lower quartile")


@dataclass(frozen=True)
class Cuts:
    """The scores from which a hit is high or medium, and at or below which it is unlike or far."""

    high: float
    medium: float
    unlike: float
    far: float

    @classmethod
    def of(cls, q25: float, q50: float, q75: float) -> Cuts | None:
        """Cuts from a background's quartiles; None when they tell no spread."""
        up, down = (q75 - q50) / QUARTILE_SIGMA, (q50 - q25) / QUARTILE_SIGMA
        if not (up > 0 and down > 0):
            return None
        return cls(q50 + Z99 * up, q50 + Z90 * up, q50 - Z90 * down, q50 - Z99 * down)

    @classmethod
    def of_row(cls, row: BackgroundRow | None) -> Cuts | None:
        if row is None or row.pairs < MIN_SAMPLE:
            return None
        return cls.of(row.at(0.25), row.at(0.50), row.at(0.75))

    @classmethod
    def of_sample(cls, similarities: np.ndarray) -> Cuts | None:
        if len(similarities) < MIN_SAMPLE:
            return None
        return cls.of(*(float(q) for q in np.quantile(similarities, (0.25, 0.50, 0.75))))

    def label(self, score: float, most_different: bool = False) -> str:
        if most_different:  # standing out as different: below the background's lower cuts
            return word(2 if score <= self.far else 1 if score <= self.unlike else 0)
        return word(2 if score >= self.high else 1 if score >= self.medium else 0)

    def shown(self, most_different: bool) -> dict[str, float]:
        """The cut of each word: from where a hit is strong, and likely (at or below, for most-different)."""
        cut = (self.far, self.unlike) if most_different else (self.high, self.medium)
        return {"strong": round(cut[0], 4), "likely": round(cut[1], 4)}


def mixed(parts: Sequence[tuple[float, Cuts]]) -> Cuts:
    """The cuts of a weighted sum of scores: the same weighted sum of each score's cuts."""
    return Cuts(*(sum(w * getattr(c, f) for w, c in parts) for f in ("high", "medium", "unlike", "far")))


@dataclass(frozen=True)
class Calibration:
    """Per hit (unit id), the cuts its total is read against; per signal, what its background is."""

    cuts: dict[int, Cuts]
    references: dict[str, str]
    most_different: bool = False

    def label(self, unit_id: int, total: float | None) -> str | None:
        cuts = self.cuts.get(unit_id)
        return None if cuts is None or total is None else cuts.label(total, self.most_different)

    def no_match(self, best: tuple[int, float | None] | None) -> bool:
        """Whether the best hit (unit id, total) is weak: background-level, or (most-different) no more
        different than unrelated clips are."""
        return best is not None and self.label(*best) == word(0)

    def hit_dict(self, unit_id: int, total: float | None) -> dict:
        label = self.label(unit_id, total)
        return {} if label is None else {"confidence": label,
                                         "cuts": self.cuts[unit_id].shown(self.most_different)}

    def as_dict(self) -> dict:
        return {"by": "background", "rule": RULE_DIFFERENT if self.most_different else RULE,
                "references": self.references}


def calibrate(hits: Iterable, concepts: Sequence[Concept], cuts_of: Mapping[str, Cuts],
              references: dict[str, str], most_different: bool) -> Calibration:
    """Each hit's cuts: Eq. 2 over its concepts of the mean of the cuts of the signals its score rests on
    (``hit.evidence``: concept -> signal -> similarity)."""
    per_hit = {}
    for hit in hits:
        parts = []
        for concept in concepts:
            signals = list(hit.evidence.get(concept.key, {}))
            parts += [(concept.weight / len(signals), cuts_of[s]) for s in signals]
        if parts:
            per_hit[hit.unit_id] = mixed(parts)
    return Calibration(per_hit, references, most_different)


def missing(signals: Iterable[str], backgrounds: Mapping[str, BackgroundRow]) -> list[str]:
    """The signals with no background worth reading (an index made before backgrounds were kept, or too few
    units)."""
    return sorted(s for s in set(signals) if Cuts.of_row(backgrounds.get(s)) is None)


def stored_cuts(signals: Iterable[str], backgrounds: Mapping[str, BackgroundRow]) -> tuple[dict[str, Cuts],
                                                                                            dict[str, str]]:
    """Cuts and a description of each signal's unit-pair background."""
    rows = {s: backgrounds[s] for s in set(signals)}
    return ({s: Cuts.of_row(r) for s, r in rows.items()},
            {s: f"random pairs of its units ({r.pairs} pairs of {r.units} units)" for s, r in rows.items()})


def relative_notice(why: str) -> str:
    return (f"confidence labels are relative to this query's own scores (strong / likely / weak), not to the "
            f"index's background: {why}")


def no_background(signals: list[str], backgrounds: Mapping[str, BackgroundRow] | None = None) -> str:
    """Why the labels stay relative, in the cause's own words: too few units (indexing again changes nothing),
    or an index made before backgrounds were kept (indexing again draws one)."""
    rows = [(backgrounds or {}).get(s) for s in signals]
    if rows and all(row is not None and row.pairs < MIN_SAMPLE for row in rows):
        units = max(row.units for row in rows)
        return relative_notice(f"{', '.join(signals)} {'has' if len(signals) == 1 else 'have'} too few units "
                               f"({units}) for a background worth reading ({MIN_SAMPLE} pairs at least); the "
                               "labels read the index's background once it holds more clips")
    return relative_notice(f"this index keeps no background of {', '.join(signals)} (indexed before backgrounds "
                           "were kept); run `convis index` again to draw one")
