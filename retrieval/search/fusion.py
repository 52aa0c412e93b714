"""Concept fusion: per concept, a small explainable model turns a pair's signals into a predicted human score.

No single signal is best for every concept (DINOv2 cosine for location, caption SBERT for actions, LMM
answers for objects), so each concept gets its own weighting, learned from human ratings:

1. **Monotone normalisation.** Each signal goes through a monotone piecewise-linear map fitted on the
   training pairs, then is z-scored with the mapped training values' mean and std. Two maps exist:
   ``isotonic`` (isotonic regression of the human score on the signal: the signal's own best monotone
   guess of the human score) and ``ecdf`` (the training ECDF with mid-ranks: rank normalisation). Both are
   stored as knots, so query-time values outside the training sample interpolate between them and values
   beyond the range are clipped to the end knots.
2. **Non-negative ridge.** ``score = intercept + sum_j w_j * z_j`` with ``w_j >= 0``: every signal is a
   similarity, so more similar must never lower the score, and signed weights between correlated signals
   would not explain anything. The ridge is solved from stored means and covariances of the z-scored
   training signals, so a pair that lacks some signals is scored by the ridge refitted on the signals it
   has (the same normal equations restricted to those signals) rather than by imputing the rest.
3. The map kind and the ridge penalty are chosen per concept by inner cross-validation on training pairs.

``contributions[j] = w_j * z_j`` is in human-score points: how far signal j moved this pair away from the
average training pair (``intercept``). Scores are not clipped to 1-5: clipping would create ties.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict, deque
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Iterable, Mapping, Sequence

import numpy as np
from scipy.optimize import isotonic_regression, nnls
from scipy.stats import spearmanr

from retrieval.core.files import atomic_write

FORMAT = "convis-fusion/1"
KINDS = ("isotonic", "ecdf")
ALPHAS = (0.01, 0.03, 0.1, 0.3, 1.0, 3.0)
MAX_KNOTS = 256  # enough to follow any ECDF closely; keeps the weights file small
MIN_STD = 1e-9  # a signal whose mapped values do not vary carries no information

# Signal names convis produces at query time. Global cosine signals are named by indexer and scored
# (cos + 1) / 2; LMM concept answers are named "reranker:<registry name>".
INDEXER_SIGNALS = ("dinov2", "clip", "text", "efficientnet-lite0", "videomae", "internvideo")
RERANKER_PREFIX = "reranker:"

PairKey = tuple[str, str]


class FusionError(ValueError):
    """A fusion model cannot be fitted, loaded or asked for this concept or these signals."""


def reranker_signal(name: str) -> str:
    """`llava-onevision` -> `reranker:llava-onevision`, the signal name of that reranker's concept score."""
    return f"{RERANKER_PREFIX}{name}"


def default_weights_path() -> Path:
    """Weights shipped with convis, fitted on all ConViS-Bench pairs (see docs/fusion.md)."""
    return Path(__file__).resolve().parents[1] / "data" / "fusion_default.json"


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


@dataclass(frozen=True)
class Normaliser:
    """A monotone piecewise-linear map (knots x -> y, clipped at the ends), then a z-score."""

    kind: str
    x: tuple[float, ...]
    y: tuple[float, ...]
    mean: float
    std: float

    def mapped(self, values: np.ndarray) -> np.ndarray:
        v = np.asarray(values, dtype=np.float64)
        out = np.interp(v, self.x, self.y)
        return np.where(np.isnan(v), np.nan, out)

    def __call__(self, values: np.ndarray) -> np.ndarray:
        return (self.mapped(values) - self.mean) / self.std

    def record(self) -> dict:
        return {"kind": self.kind, "x": list(self.x), "y": list(self.y), "mean": self.mean, "std": self.std}


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


@dataclass(frozen=True)
class FusedScore:
    score: float  # predicted human 1-5 rating (not clipped)
    used: list[str]  # signals that entered the score, in model order
    contributions: dict[str, float]  # signal -> human-score points it added to the intercept
    intercept: float = 0.0  # the average training pair's rating; score = intercept + sum(contributions)


@dataclass
class ConceptModel:
    concept: str
    kind: str
    alpha: float
    signals: list[str]
    normalisers: dict[str, Normaliser]
    cov: np.ndarray  # covariance of the z-scored signals (pairwise-complete)
    cross: np.ndarray  # covariance of each z-scored signal with the human score
    intercept: float  # mean human score of the training pairs
    n_train: int
    coverage: dict[str, int]  # training pairs on which each signal was present
    _solved: dict[tuple[int, ...], np.ndarray] = field(default_factory=dict, repr=False, compare=False)

    def weights(self, present: Sequence[str] | None = None) -> dict[str, float]:
        """Ridge weights on the z-scored signals, refitted on ``present`` (default: all)."""
        idx = self._index(self.signals if present is None else present)
        return {self.signals[i]: float(w) for i, w in zip(idx, self._solve(idx))}

    def _index(self, names: Iterable[str]) -> tuple[int, ...]:
        wanted = set(names)
        return tuple(i for i, s in enumerate(self.signals) if s in wanted)

    def _solve(self, idx: tuple[int, ...]) -> np.ndarray:
        if idx not in self._solved:
            sel = np.asarray(idx, dtype=np.int64)
            self._solved[idx] = nonneg_ridge(self.cov[np.ix_(sel, sel)], self.cross[sel], self.alpha)
        return self._solved[idx]

    def zscores(self, columns: Mapping[str, np.ndarray], n: int) -> np.ndarray:
        """(n, p) z-scored signals; NaN where a signal is missing or not given."""
        z = np.full((n, len(self.signals)), np.nan)
        for j, name in enumerate(self.signals):
            if name in columns:
                z[:, j] = self.normalisers[name](columns[name])
        return z

    def predict_arrays(self, columns: Mapping[str, np.ndarray]) -> np.ndarray:
        """Vectorised scores; each missing-signal pattern gets its own refitted weights. NaN = no signal."""
        n = len(next(iter(columns.values()))) if columns else 0
        z = self.zscores(columns, n)
        present = ~np.isnan(z)
        out = np.full(n, np.nan)
        for pattern in {tuple(row) for row in present}:
            idx = tuple(int(i) for i in np.flatnonzero(pattern))
            if not idx:
                continue
            rows = np.all(present == np.array(pattern), axis=1)
            out[rows] = self.intercept + z[np.ix_(rows, np.asarray(idx))] @ self._solve(idx)
        return out

    def predict(self, signals: Mapping[str, float | None]) -> FusedScore:
        values = {s: float(v) for s, v in signals.items() if v is not None and math.isfinite(float(v))}
        used = [s for s in self.signals if s in values]
        if not used:
            raise FusionError(
                f"{self.concept}: none of the model's signals is given "
                f"(model uses {', '.join(self.signals)}; got {', '.join(sorted(signals)) or 'nothing'})"
            )
        weights = self.weights(used)
        contributions = {s: weights[s] * float(self.normalisers[s](np.array([values[s]]))[0]) for s in used}
        return FusedScore(self.intercept + sum(contributions.values()), used, contributions, self.intercept)

    def with_alpha(self, alpha: float) -> ConceptModel:
        return replace(self, alpha=alpha, _solved={})

    def record(self) -> dict:
        return {
            "normaliser": self.kind, "alpha": self.alpha, "intercept": self.intercept, "n_train": self.n_train,
            "signals": self.signals, "weights": self.weights(), "coverage": self.coverage,
            "normalisers": {s: self.normalisers[s].record() for s in self.signals},
            "cov": self.cov.tolist(), "cross": self.cross.tolist(),
        }

    @classmethod
    def from_record(cls, concept: str, r: dict) -> ConceptModel:
        norms = {s: Normaliser(n["kind"], tuple(n["x"]), tuple(n["y"]), n["mean"], n["std"])
                 for s, n in r["normalisers"].items()}
        p = len(r["signals"])
        cov, cross = np.asarray(r["cov"], dtype=np.float64), np.asarray(r["cross"], dtype=np.float64)
        if cov.shape != (p, p) or cross.shape != (p,) or set(norms) != set(r["signals"]):
            raise FusionError(f"{concept}: covariance, normalisers and signals do not match")
        return cls(concept, r["normaliser"], float(r["alpha"]), list(r["signals"]), norms, cov, cross,
                   float(r["intercept"]), int(r["n_train"]), {k: int(v) for k, v in r["coverage"].items()})


def nonneg_ridge(cov: np.ndarray, cross: np.ndarray, alpha: float) -> np.ndarray:
    """argmin_w  w'(cov + alpha I)w - 2 cross'w  subject to w >= 0, via NNLS on the Cholesky factor."""
    p = len(cross)
    a = cov + alpha * np.eye(p)
    try:
        chol = np.linalg.cholesky(a)
    except np.linalg.LinAlgError:
        # pairwise-complete covariances need not be positive definite: clip the spectrum
        vals, vecs = np.linalg.eigh((a + a.T) / 2)
        chol = np.linalg.cholesky(vecs @ np.diag(np.maximum(vals, alpha)) @ vecs.T)
    w, _ = nnls(chol.T, np.linalg.solve(chol, cross))
    return w


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


class FusionModel:
    """Per-concept fusion models, saved as JSON."""

    def __init__(self, models: Mapping[str, ConceptModel], meta: Mapping | None = None):
        self.models = dict(models)
        self.meta = dict(meta or {})

    @classmethod
    def fit(cls, table: PairTable, concepts: Sequence[str] | None = None, *, kinds: Sequence[str] = KINDS,
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
        return cls(models, {**info, **(meta or {})})

    @property
    def concepts(self) -> list[str]:
        return list(self.models)

    def model(self, concept_key: str) -> ConceptModel:
        try:
            return self.models[concept_key]
        except KeyError:
            raise FusionError(f"no fusion model for concept {concept_key!r}; "
                              f"known: {', '.join(self.models)}") from None

    def signals(self, concept_key: str) -> list[str]:
        return list(self.model(concept_key).signals)

    def weights(self, concept_key: str, present: Sequence[str] | None = None) -> dict[str, float]:
        return self.model(concept_key).weights(present)

    def predict(self, concept_key: str, signals: Mapping[str, float | None]) -> FusedScore:
        """Predicted human rating from whichever of the concept's signals are given (None/NaN = missing)."""
        return self.model(concept_key).predict(signals)

    def predict_arrays(self, concept_key: str, columns: Mapping[str, np.ndarray]) -> np.ndarray:
        return self.model(concept_key).predict_arrays(columns)

    def save(self, path: str | Path) -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        data = {"format": FORMAT, "meta": finite(self.meta),
                "concepts": {c: m.record() for c, m in self.models.items()}}
        text = json.dumps(data, indent=1, allow_nan=False) + "\n"
        atomic_write(path, lambda tmp: Path(tmp).write_text(text, encoding="utf-8"))  # readers never see half
        return path

    @classmethod
    def load(cls, path: str | Path) -> FusionModel:
        path = Path(path)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            raise FusionError(f"cannot read fusion weights {path}: {e}") from None
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise FusionError(f"{path}: not a {FORMAT} weights file")
        try:
            models = {c: ConceptModel.from_record(c, r) for c, r in data["concepts"].items()}
        except (KeyError, TypeError, ValueError) as e:
            raise FusionError(f"{path}: malformed fusion weights ({e})") from None
        return cls(models, data.get("meta"))


def finite(value):
    """NaN and infinities as None, recursively, so the JSON stays standard."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    return value
