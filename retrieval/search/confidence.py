"""How far a hit stands out from its own query's candidates: a label, and the range worth drawing.

Similarities are not calibrated: one embedding puts every clip of a collection between 0.6 and 0.99, another
between 0.1 and 0.4, so a fixed cut (or a bar drawn from 0 to 1) says little.  What does say something is how a
hit compares with the other candidates of the same query.  The label is the modified z-score of Iglewicz and
Hoaglin (1993), ``M = (x - median) / (1.4826 * MAD)``, read with their outlier cut ``M >= 3.5`` (a *strong*
match), ``M >= 2`` a *likely* one, below that *weak*.  When more than half the scores tie (MAD 0) the mean
absolute deviation stands in (``1.2533 * MeanAD``, their fallback); when every score ties, or fewer than
``MIN_POOL`` were scored, there is no label.

Against what: the scores the final ones were given to (every recalled candidate when the indexed signals score
the query, the shortlist when a reranker, fusion or a pair signal rescored it).  When those scores fall in two
clear groups (Otsu's threshold splits them, and his separability, between-group over total variance, is at
least ``TWO_GROUPS``; a normal sample gives 2/pi = 0.64, a uniform one 0.75), the median and scale are the
lower group's: in a small collection where half the clips match, the matches are measured against the clips that
do not, instead of against a median that sits among them.  A most-different query reads the scores the other
way (the lowest stand out).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

import numpy as np

# The one confidence vocabulary of every answer (query, --change, search of each mode, compare, most-different)
# and every surface (CLI, HTML page, web app, JSON): how far a hit stands out, whichever rule measured it.
WORDS = ("strong", "likely", "weak")
GRADE = {word: len(WORDS) - 1 - i for i, word in enumerate(WORDS)}  # strong 2, likely 1, weak 0
NOTHING_GOOD = "no clip matches this well; closest shown"  # the best hit is weak: every mode says so


def word(grade: int) -> str:
    """The word for a grade (2 strong, 1 likely, 0 weak)."""
    return WORDS[len(WORDS) - 1 - grade]


def weaker(*labels: str | None) -> str | None:
    """The lowest of the readable labels (a change's hit is no stronger than its change score)."""
    known = [label for label in labels if label is not None]
    return min(known, key=GRADE.__getitem__) if known else None

STRONG = 3.5  # Iglewicz & Hoaglin's outlier cut for the modified z-score
LIKELY = 2.0
MIN_POOL = 5  # fewer scores than this say nothing about their spread
TWO_GROUPS = 0.8  # Otsu's separability from which the scores are taken as two groups (see above)
MIN_GROUP = 3  # the lower group needs this many scores to give a median and a scale
MAD_SCALE = 1.4826  # 1 / Phi^-1(3/4): MAD to a normal sigma
MEAN_AD_SCALE = 1.2533  # sqrt(pi / 2): MeanAD to a normal sigma, as 1.4826 is for MAD


@dataclass(frozen=True)
class Spread:
    """The pool's median and robust scale, and the range its scores span."""

    n: int
    median: float
    scale: float  # a normal sigma's estimate; 0 when the scores tell nothing apart
    low: float
    high: float
    descending: bool = True  # False: a most-different query, where low scores stand out
    grouped: bool = False  # the scores fell in two groups: the median and scale are the lower group's

    @classmethod
    def of(cls, scores: Iterable[float | None], descending: bool = True) -> Spread | None:
        """The spread of the readable ``scores``; None when there are none."""
        values = np.array([s for s in scores if s is not None and np.isfinite(s)], dtype=np.float64)
        if values.size == 0:
            return None
        signed = values if descending else -values  # standing out is always upward below
        reference = lower_group(signed)
        median, scale = _centre(reference if reference is not None else signed)
        if reference is not None and scale == 0.0:  # a lower group of ties tells no scale: the whole pool does
            reference = None
            median, scale = _centre(signed)
        return cls(int(values.size), median if descending else -median, scale, float(values.min()),
                   float(values.max()), descending, reference is not None)

    def z(self, score: float | None) -> float | None:
        """The modified z-score, signed so that standing out is positive; None when it cannot be told."""
        if score is None or self.scale == 0.0 or self.n < MIN_POOL:
            return None
        z = (score - self.median) / self.scale
        return z if self.descending else -z

    def label(self, score: float | None) -> str | None:
        z = self.z(score)
        if z is None:
            return None
        return word(2 if z >= STRONG else 1 if z >= LIKELY else 0)

    def as_dict(self) -> dict:
        return {"n": self.n, "median": round(self.median, 4), "scale": round(self.scale, 4),
                "low": round(self.low, 4), "high": round(self.high, 4),
                "grouped": self.grouped, "rule": self._rule()}

    def _rule(self) -> str:
        if self.n < MIN_POOL:
            return f"only {self.n} scored candidates: too few to label"
        against = "the group of lower scores among" if self.grouped else "the"
        if not self.descending:
            against = "the group of higher scores among" if self.grouped else "the"
        return (f"modified z-score against {against} {self.n} scored candidates: strong >= {STRONG:g}, likely >= "
                f"{LIKELY:g}, else weak")


def lower_group(values: np.ndarray) -> np.ndarray | None:
    """The lower of two clear groups of ``values`` (Otsu's split with separability >= TWO_GROUPS), else None."""
    ordered = np.sort(values)
    n, total = ordered.size, float(np.var(ordered))
    if n < MIN_POOL or total == 0.0:
        return None
    cut = np.arange(1, n)
    sums = np.cumsum(ordered)[:-1]
    low_mean, high_mean = sums / cut, (ordered.sum() - sums) / (n - cut)
    between = (cut / n) * (1 - cut / n) * (low_mean - high_mean) ** 2
    best = int(np.argmax(between))
    if between[best] / total < TWO_GROUPS or cut[best] < MIN_GROUP:
        return None
    return ordered[:cut[best]]


def _centre(values: np.ndarray) -> tuple[float, float]:
    """The median and the normal-sigma scale of ``values``: MAD, or MeanAD when more than half of them tie."""
    median = float(np.median(values))
    # scipy.stats.median_abs_deviation(scale="normal") is this; a query stays free of scipy's import time
    scale = MAD_SCALE * float(np.median(np.abs(values - median)))
    if scale == 0.0:
        scale = MEAN_AD_SCALE * float(np.mean(np.abs(values - median)))
    return median, scale


def concept_ranges(scores: Sequence[dict[str, float | None]], keys: Iterable[str]) -> dict[str, list[float]]:
    """Per concept, [lowest, highest] of the pool's readable scores: the span a bar is worth drawing over."""
    ranges = {}
    for key in keys:
        values = [s[key] for s in scores if s.get(key) is not None and np.isfinite(s[key])]
        if values:
            ranges[key] = [round(min(values), 4), round(max(values), 4)]
    return ranges
