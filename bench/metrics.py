"""ConViS-Bench metrics: pair correlation (Tables 2-3) and top-1 retrieval with ties (Table 4).

Pure functions on numbers and small dicts; every reported value is x100 like the paper.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Collection, Iterable, Mapping, Sequence

import numpy as np
from scipy.stats import kendalltau, spearmanr

UNPARSEABLE = 0.0  # what the released LMM files hold when the answer could not be parsed
NEUTRAL = 3.0  # the middle of the 1-5 scale; the reference scores unparseable answers as this

Ranks = Mapping[str, int]  # candidate -> rank, 1 = most similar, equal ranks = ties
Scores = Mapping[str, float]  # candidate -> model score, higher = more similar


# ---------------------------------------------------------------- pair correlation


@dataclass(frozen=True)
class Correlation:
    rho: float  # Spearman x100, 2 decimals
    tau: float  # Kendall tau-b x100, 2 decimals
    n: int  # pairs used


def fill_unparseable(scores: Sequence[float], fill: float = NEUTRAL) -> np.ndarray:
    """Replace the 0.0 'could not parse' marker; only done for correlation, not retrieval."""
    x = np.asarray(scores, dtype=np.float64)
    return np.where(x == UNPARSEABLE, fill, x)


def correlation(model: Sequence[float], human: Sequence[float]) -> Correlation:
    """Spearman rho and Kendall tau-b between model scores and human means, as the paper reports them."""
    x, y = fill_unparseable(model), np.asarray(human, dtype=np.float64)
    if len(x) != len(y):
        raise ValueError(f"{len(x)} model scores but {len(y)} human scores")
    if len(x) < 2 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return Correlation(math.nan, math.nan, len(x))  # undefined; scipy would warn and give NaN
    rho = spearmanr(x, y).statistic
    tau = kendalltau(x, y).statistic  # variant="b" is scipy's default
    return Correlation(_x100(rho), _x100(tau), len(x))


def _x100(value: float) -> float:
    return round(float(value) * 100, 2) if np.isfinite(value) else math.nan


# ---------------------------------------------------------------- ranks and tie sets


def dense_ranks(scores: Scores) -> dict[str, int]:
    """Equal scores share a rank; ranks have no gaps; rank 1 = highest score."""
    distinct = sorted(set(scores.values()), reverse=True)
    rank_of = {value: i + 1 for i, value in enumerate(distinct)}
    return {key: rank_of[value] for key, value in scores.items()}


def top_set(ranks: Ranks) -> set[str]:
    best = min(ranks.values())
    return {k for k, r in ranks.items() if r == best}


def bottom_set(ranks: Ranks) -> set[str]:
    worst = max(ranks.values())
    return {k for k, r in ranks.items() if r == worst}


# ---------------------------------------------------------------- set retrieval at 1


@dataclass(frozen=True)
class SetScores:
    recall: float
    precision: float
    f1: float


def set_scores(relevant: Collection[str], predicted: Collection[str]) -> SetScores:
    """R = |rel & pred| / |rel|, P = |rel & pred| / |pred|, F1 their harmonic mean (0 if both 0)."""
    hit = len(set(relevant) & set(predicted))
    r = hit / len(relevant) if relevant else 0.0
    p = hit / len(predicted) if predicted else 0.0
    f1 = 2 * r * p / (r + p) if r + p > 0 else 0.0
    return SetScores(r, p, f1)


def top1(human: Ranks, model: Scores) -> SetScores:
    """The human's best-ranked set against every candidate tied at the model's top score."""
    return set_scores(top_set(human), top_set(dense_ranks(model)))


def bottom1(human: Ranks, model: Scores) -> SetScores:
    """Same at the other end: the least similar candidates."""
    return set_scores(bottom_set(human), bottom_set(dense_ranks(model)))


def random_choice(human: Ranks) -> SetScores:
    """Expected scores of one uniform pick among n candidates when k share the best human rank."""
    n, k = len(human), len(top_set(human))
    return SetScores(1 / n, k / n, (k / n) * 2 / (k + 1))


# ---------------------------------------------------------------- order agreement


def anchor_tau(human: Ranks, model: Scores) -> float:
    """Kendall tau-b between the human order and the model's; NaN when either side is all ties."""
    keys = list(human)
    model_ranks = dense_ranks({k: model[k] for k in keys})
    a, b = [human[k] for k in keys], [model_ranks[k] for k in keys]
    if len(set(a)) < 2 or len(set(b)) < 2:
        return math.nan
    # both are ranks (1 = best), so agreeing orders give a positive tau
    return float(kendalltau(a, b).statistic)


def relevance(human: Ranks) -> dict[str, int]:
    """Graded relevance from ranks: the worst rank gets 1, each better rank one more."""
    worst = max(human.values())
    return {k: worst + 1 - r for k, r in human.items()}


# convis's own NDCG, not a number of the paper; the reference script computes another one it never reports
# (sklearn's ndcg_score with the raw human rank numbers as gains, so the least similar candidate gains most)
NDCG_LABEL = "NDCG*"  # a table's column; its footnote (and --json's ndcg_variant) is NDCG_VARIANT
NDCG_VARIANT = "convis's own NDCG: gain = worst human rank + 1 - rank, tied scores share gains; not in the paper"


def ndcg(human: Ranks, model: Scores, k: int | None = None) -> float:
    """NDCG@k with relevance from the human ranks (``relevance``: the worst rank gains 1, each better rank one
    more); tied model scores share their gains (averaged), as sklearn's ``ndcg_score`` does. See NDCG_VARIANT."""
    rel = relevance(human)
    keys = list(rel)
    gains = np.array([rel[c] for c in keys], dtype=np.float64)
    scores = np.array([model[c] for c in keys], dtype=np.float64)
    ideal = _dcg(gains, gains, k)
    return float(_dcg(gains, scores, k) / ideal) if ideal > 0 else 0.0


def _dcg(gains: np.ndarray, scores: np.ndarray, k: int | None) -> float:
    # tie-aware DCG: every item of a tied group gets the group's mean gain
    k = len(gains) if k is None else min(k, len(gains))
    discounts = 1 / np.log2(np.arange(2, len(gains) + 2))
    discounts[k:] = 0.0
    order = np.argsort(-scores, kind="stable")
    gains, scores = gains[order], scores[order]
    total, start = 0.0, 0
    for end in range(1, len(gains) + 1):
        if end == len(gains) or scores[end] != scores[start]:
            total += gains[start:end].mean() * discounts[start:end].sum()
            start = end
    return total


# ---------------------------------------------------------------- ranked lists


def average_precision_at_k(ranked: Sequence[str], relevant: Collection[str], k: int) -> float:
    """AP@K = sum over hits in the top K of precision at that hit, / min(|relevant|, K)."""
    relevant = set(relevant)
    if not relevant or k <= 0:
        return 0.0
    hits, total = 0, 0.0
    for i, item in enumerate(ranked[:k], start=1):
        if item in relevant:
            hits += 1
            total += hits / i
    return total / min(len(relevant), k)


def map_at_k(queries: Iterable[tuple[Sequence[str], Collection[str]]], k: int) -> float:
    """Mean of AP@K over (ranked list, relevant set) queries, x100."""
    aps = [average_precision_at_k(ranked, relevant, k) for ranked, relevant in queries]
    return 100 * float(np.mean(aps)) if aps else math.nan


# ---------------------------------------------------------------- a whole retrieval split


@dataclass(frozen=True)
class Retrieval:
    recall: float  # R@1 x100
    precision: float  # P@1 x100
    f1: float  # F1@1 x100
    bottom_recall: float
    bottom_precision: float
    bottom_f1: float
    tau: float  # mean per-anchor Kendall tau x100 (anchors where it is defined)
    ndcg: float  # mean NDCG x100
    n: int  # anchors scored


def retrieval(human: Mapping[str, Ranks], model: Mapping[str, Scores]) -> Retrieval:
    """Average the per-anchor metrics over the anchors both sides cover.

    As the reference (``baselines/compute_retrieval_metrics.py``): the model's predicted set at 1 (and at the
    bottom) is formed from its scores over all of the anchor's candidates, those the human did not rank
    included, so a model whose top score goes to an unranked candidate has predicted it; the relevant set is
    the human's best (worst) ranked candidates among those the model scored (the reference requires it to score
    them all). Tau and NDCG compare orders on the candidates both rank. The model's 0.0 stays a score (it ranks
    lowest), unlike for correlation.
    """
    pairs = [(h, {k: float(v) for k, v in model[a].items()}) for a, h in scored(human, model).items()]
    if not pairs:
        return Retrieval(*([math.nan] * 8), 0)
    top = [top1(h, m) for h, m in pairs]
    bottom = [bottom1(h, m) for h, m in pairs]
    taus = [t for t in (anchor_tau(h, m) for h, m in pairs) if np.isfinite(t)]
    return Retrieval(
        *_mean_sets(top),
        *_mean_sets(bottom),
        tau=100 * float(np.mean(taus)) if taus else math.nan,
        ndcg=100 * float(np.mean([ndcg(h, m) for h, m in pairs])),
        n=len(pairs),
    )


def random_retrieval(human: Mapping[str, Ranks]) -> SetScores:
    """The random-choice row: expected R@1, P@1, F1@1 x100, averaged over anchors."""
    rows = [random_choice(h) for h in human.values() if h]
    if not rows:
        return SetScores(math.nan, math.nan, math.nan)
    return SetScores(*_mean_sets(rows))


def scored(human: Mapping[str, Ranks], model: Mapping[str, Scores]) -> dict[str, dict[str, int]]:
    """The human ranks `retrieval` averages over: anchors both sides cover, on the candidates both rank."""
    out = {}
    for anchor, scores in model.items():
        ranks = {k: r for k, r in human.get(anchor, {}).items() if k in scores}
        if ranks:
            out[anchor] = ranks
    return out


def _mean_sets(rows: list[SetScores]) -> tuple[float, float, float]:
    return tuple(100 * float(np.mean([getattr(r, f) for r in rows])) for f in ("recall", "precision", "f1"))
