"""Fitting concept fusion from human ratings: the weights files that `retrieval.search.fusion` loads.

Per concept (the model itself is described in ``retrieval/search/fusion.py``):

1. **Monotone normalisation**, fitted on the training pairs. Two maps exist: ``isotonic`` (isotonic
   regression of the human score on the signal: the signal's own best monotone guess of the human score) and
   ``ecdf`` (the training ECDF with mid-ranks: rank normalisation). Both are stored as knots.
2. **Moments** of the z-scored signals (pairwise-complete covariances), from which the non-negative ridge is
   solved at query time for whichever signals a pair has.
3. The map kind and the ridge penalty are chosen per concept by inner cross-validation on training pairs.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict, deque
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Mapping, Sequence

import numpy as np
from scipy.optimize import isotonic_regression
from scipy.stats import spearmanr

from bench.loaders import PairKey
from retrieval.core.files import atomic_write
from retrieval.search.fusion import FORMAT, ConceptModel, FusionError, FusionModel, Normaliser

KINDS = ("isotonic", "ecdf")
ALPHAS = (0.01, 0.03, 0.1, 0.3, 1.0, 3.0)
MAX_KNOTS = 256  # enough to follow any ECDF closely; keeps the weights file small
MIN_STD = 1e-9  # a signal whose mapped values do not vary carries no information


# ---------------------------------------------------------------- training data


@dataclass
class PairTable:
    """Rated pairs with their signals. NaN = not rated (labels) or signal missing (columns)."""

    pairs: list[PairKey]
    labels: dict[str, np.ndarray]  # concept -> human mean 1-5
    columns: dict[str, dict[str, np.ndarray]]  # concept -> signal name -> value per pair

    def signals(self, concept: str) -> list[str]:
        return list(self.columns.get(concept, {}))

    def take(self, idx: np.ndarray) -> PairTable:
        idx = np.asarray(idx, dtype=np.int64)
        return PairTable(
            [self.pairs[i] for i in idx],
            {c: y[idx] for c, y in self.labels.items()},
            {c: {s: v[idx] for s, v in cols.items()} for c, cols in self.columns.items()},
        )

    def restrict(self, signals: Iterable[str]) -> PairTable:
        """Only these signals (those present per concept)."""
        keep = set(signals)
        return PairTable(self.pairs, self.labels,
                         {c: {s: v for s, v in cols.items() if s in keep} for c, cols in self.columns.items()})


# ---------------------------------------------------------------- folds


@dataclass(frozen=True)
class Fold:
    train: np.ndarray  # pair indices the model may see
    test: np.ndarray  # pair indices it is scored on


def make_folds(pairs: Sequence[PairKey], k: int, seed: int = 0, group_by_video: bool = False) -> list[Fold]:
    """k folds; every pair is tested exactly once.

    With ``group_by_video``, no video has pairs on both sides of a fold: training drops every pair that
    shares a video with a test pair ("purging"). Grouping by connected components alone cannot give k
    balanced folds on ConViS-Bench (one component holds about 64% of the pairs), so test folds are
    contiguous runs of a breadth-first walk over the pair graph: pairs that share videos land in the same
    fold, and purging removes few training pairs.
    """
    n = len(pairs)
    if not 2 <= k <= n:
        raise FusionError(f"need 2 <= folds <= pairs, got {k} folds for {n} pairs")
    rng = np.random.default_rng(seed)
    order = _graph_order(pairs, rng) if group_by_video else rng.permutation(n)
    tests = [np.sort(chunk) for chunk in np.array_split(np.asarray(order, dtype=np.int64), k)]
    folds = [Fold(_train_of(pairs, t, group_by_video), t) for t in tests]
    if any(len(f.train) == 0 for f in folds):
        raise FusionError("a fold has no training pair left after removing shared videos; use fewer folds")
    return folds


def _graph_order(pairs: Sequence[PairKey], rng: np.random.Generator) -> list[int]:
    """Breadth-first order over pairs linked by a shared video, components started in random order."""
    by_video: dict[str, list[int]] = defaultdict(list)
    for i, pair in enumerate(pairs):
        for video in set(pair):
            by_video[video].append(i)
    seen = np.zeros(len(pairs), dtype=bool)
    order: list[int] = []
    for start in rng.permutation(len(pairs)):
        if seen[start]:
            continue
        seen[start] = True
        queue = deque([int(start)])
        while queue:
            i = queue.popleft()
            order.append(i)
            for video in sorted(set(pairs[i])):
                for j in by_video[video]:
                    if not seen[j]:
                        seen[j] = True
                        queue.append(j)
    return order


def _train_of(pairs: Sequence[PairKey], test: np.ndarray, purge: bool) -> np.ndarray:
    in_test = np.zeros(len(pairs), dtype=bool)
    in_test[test] = True
    if purge:
        test_videos = {v for i in test for v in pairs[i]}
        in_test |= np.array([bool(set(p) & test_videos) for p in pairs])
    return np.flatnonzero(~in_test)


# ---------------------------------------------------------------- normalisation


def fit_normaliser(values: np.ndarray, target: np.ndarray, kind: str) -> Normaliser | None:
    """Fit on the pairs where the signal is present; None when it does not vary there."""
    present = ~np.isnan(values)
    x, t = values[present], target[present]
    if len(x) < 2:
        return None
    uniq, inverse, counts = np.unique(x, return_inverse=True, return_counts=True)
    if kind == "isotonic":
        sums = np.bincount(inverse, weights=t, minlength=len(uniq))
        y = isotonic_regression(sums / counts, weights=counts.astype(np.float64)).x
    elif kind == "ecdf":
        below = np.cumsum(counts) - counts
        y = (below + counts / 2) / len(x)  # mid-rank: tied values share their average rank
    else:
        raise FusionError(f"unknown normalisation {kind!r}; use one of {', '.join(KINDS)}")
    knots_x, knots_y = _thin(uniq, y)
    mapped = np.interp(x, knots_x, knots_y)
    std = float(mapped.std())
    if std < MIN_STD:
        return None
    return Normaliser(kind, tuple(map(float, knots_x)), tuple(map(float, knots_y)), float(mapped.mean()), std)


def _thin(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Drop knots inside flat runs (interpolation is unchanged), then subsample to MAX_KNOTS."""
    keep = np.ones(len(x), dtype=bool)
    keep[1:-1] = (y[1:-1] != y[:-2]) | (y[1:-1] != y[2:])
    x, y = x[keep], y[keep]
    if len(x) > MAX_KNOTS:
        idx = np.unique(np.round(np.linspace(0, len(x) - 1, MAX_KNOTS)).astype(np.int64))
        x, y = x[idx], y[idx]
    return x, y


# ---------------------------------------------------------------- one concept


def fit_concept(concept: str, columns: Mapping[str, np.ndarray], labels: np.ndarray, kind: str,
                alpha: float) -> ConceptModel:
    """Fit normalisers and the moments of one concept on the rated pairs."""
    rated = ~np.isnan(labels)
    y = labels[rated]
    if len(y) < 3:
        raise FusionError(f"{concept}: need at least 3 rated pairs, got {len(y)}")
    norms = {}
    for name, values in columns.items():
        norm = fit_normaliser(np.asarray(values, dtype=np.float64)[rated], y, kind)
        if norm is not None:
            norms[name] = norm
    if not norms:
        raise FusionError(f"{concept}: no signal varies over the rated pairs")
    signals = list(norms)
    z = np.column_stack([norms[s](np.asarray(columns[s], dtype=np.float64)[rated]) for s in signals])
    cov, cross = _moments(z, y)
    coverage = {s: int(np.sum(~np.isnan(z[:, j]))) for j, s in enumerate(signals)}
    return ConceptModel(concept, kind, alpha, signals, norms, cov, cross, float(y.mean()), len(y), coverage)


def _moments(z: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Pairwise-complete covariances; a z-score is centred on the pairs where its signal is present."""
    present = ~np.isnan(z)
    filled = np.where(present, z, 0.0)
    mask = present.astype(np.float64)
    both = np.maximum(mask.T @ mask, 1.0)
    cov = (filled.T @ filled) / both
    cross = (filled.T @ (y - y.mean())) / np.maximum(mask.sum(axis=0), 1.0)
    return cov, cross


# ---------------------------------------------------------------- hyperparameters


@dataclass(frozen=True)
class Choice:
    kind: str
    alpha: float
    inner_rho: float  # pooled inner-CV Spearman x100 of the chosen setting


def choose(concept: str, table: PairTable, kinds: Sequence[str], alphas: Sequence[float], folds: int,
           seed: int, group_by_video: bool) -> Choice:
    """Normaliser kind and penalty with the best pooled Spearman over inner folds of ``table`` only."""
    y = table.labels[concept]
    inner = make_folds(table.pairs, folds, seed, group_by_video)
    preds = {(k, a): np.full(len(y), np.nan) for k in kinds for a in alphas}
    for fold in inner:
        for kind in kinds:
            base = _fit_fold(concept, table, fold.train, kind, alphas[0])
            cols = {s: v[fold.test] for s, v in table.columns[concept].items()}
            for alpha in alphas:
                preds[(kind, alpha)][fold.test] = base.with_alpha(alpha).predict_arrays(cols)
    scored = [(spearman(p, y), kind, alpha) for (kind, alpha), p in preds.items()]
    rho, kind, alpha = max(scored, key=lambda s: s[0] if math.isfinite(s[0]) else -math.inf)
    return Choice(kind, alpha, round(100 * rho, 2) if math.isfinite(rho) else math.nan)


def _fit_fold(concept: str, table: PairTable, idx: np.ndarray, kind: str, alpha: float) -> ConceptModel:
    cols = {s: v[idx] for s, v in table.columns[concept].items()}
    return fit_concept(concept, cols, table.labels[concept][idx], kind, alpha)


def spearman(pred: np.ndarray, y: np.ndarray) -> float:
    ok = ~np.isnan(pred) & ~np.isnan(y)
    if ok.sum() < 3 or np.ptp(pred[ok]) == 0 or np.ptp(y[ok]) == 0:
        return math.nan
    return float(spearmanr(pred[ok], y[ok]).statistic)


# ---------------------------------------------------------------- all concepts


def fit_fusion(table: PairTable, concepts: Sequence[str] | None = None, *, kinds: Sequence[str] = KINDS,
               alphas: Sequence[float] = ALPHAS, inner_folds: int = 5, seed: int = 0,
               group_by_video: bool = False, meta: Mapping | None = None) -> FusionModel:
    """Choose each concept's normaliser and penalty by inner CV on ``table``, then fit on all of it.

    One kind and one alpha skip the inner CV.
    """
    models, choices = {}, {}
    for concept in concepts or list(table.labels):
        rated = table.take(np.flatnonzero(~np.isnan(table.labels[concept])))
        choice = (Choice(kinds[0], alphas[0], math.nan) if len(kinds) == 1 and len(alphas) == 1
                  else choose(concept, rated, kinds, alphas, inner_folds, seed, group_by_video))
        models[concept] = fit_concept(concept, rated.columns[concept], rated.labels[concept],
                                      choice.kind, choice.alpha)
        choices[concept] = {"kind": choice.kind, "alpha": choice.alpha, "inner_cv_rho": choice.inner_rho}
    info = {"inner_folds": inner_folds, "seed": seed, "group_by_video": group_by_video, "choices": choices}
    return FusionModel(models, {**info, **(meta or {})})


# ---------------------------------------------------------------- the weights file


def save_fusion(model: FusionModel, path: str | Path) -> Path:
    """Write ``model`` as a weights file that ``FusionModel.load`` reads."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {"format": FORMAT, "meta": finite(model.meta),
            "concepts": {c: _concept_record(m) for c, m in model.models.items()}}
    text = json.dumps(data, indent=1, allow_nan=False) + "\n"
    atomic_write(path, lambda tmp: Path(tmp).write_text(text, encoding="utf-8"))  # readers never see half
    return path


def _concept_record(m: ConceptModel) -> dict:
    return {
        "normaliser": m.kind, "alpha": m.alpha, "intercept": m.intercept, "n_train": m.n_train,
        "signals": m.signals, "weights": m.weights(), "coverage": m.coverage,
        "normalisers": {s: _normaliser_record(m.normalisers[s]) for s in m.signals},
        "cov": m.cov.tolist(), "cross": m.cross.tolist(),
    }


def _normaliser_record(n: Normaliser) -> dict:
    return {"kind": n.kind, "x": list(n.x), "y": list(n.y), "mean": n.mean, "std": n.std}


def finite(value):
    """NaN and infinities as None, recursively, so the JSON stays standard."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    return value
