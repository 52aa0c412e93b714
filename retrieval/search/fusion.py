"""Concept fusion at query time: per concept, a small explainable model turns a pair's signals into a predicted
human score.

No single signal is best for every concept (DINOv2 cosine for location, caption SBERT for actions, LMM
answers for objects), so each concept has its own weighting, learned from human ratings by
``convis bench fusion`` (``bench/fusion_train.py``) and stored in a weights file. This module loads such a
file and predicts:

1. **Monotone normalisation.** Each signal goes through a monotone piecewise-linear map (stored as knots:
   values between knots interpolate, values beyond the range are clipped to the end knots), then is z-scored
   with the mapped training values' mean and std.
2. **Non-negative ridge.** ``score = intercept + sum_j w_j * z_j`` with ``w_j >= 0``: every signal is a
   similarity, so more similar must never lower the score, and signed weights between correlated signals
   would not explain anything. The ridge is solved from the stored means and covariances of the z-scored
   training signals, so a pair that lacks some signals is scored by the ridge refitted on the signals it
   has (the same normal equations restricted to those signals) rather than by imputing the rest.

``contributions[j] = w_j * z_j`` is in human-score points: how far signal j moved this pair away from the
average training pair (``intercept``). Scores are not clipped to 1-5: clipping would create ties.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Iterable, Mapping, Sequence

import numpy as np

from retrieval.core.errors import ConvisError
from retrieval.core.user_files import read_json

FORMAT = "convis-fusion/1"

# Signal names convis produces at query time. Global cosine signals are named by indexer (the registry's
# names) and scored (cos + 1) / 2; LMM concept answers are named "reranker:<registry name>".
RERANKER_PREFIX = "reranker:"
# A concept's own descriptions (written at index time), compared by the text indexer: one signal per concept,
# named alike in every concept's model. No released file has it; `convis bench fusion` fits it from rated pairs.
DESCRIPTIONS = "descriptions"


class FusionError(ConvisError, ValueError):
    """A fusion model cannot be fitted, loaded or asked for this concept or these signals."""

    exit_code, http_status = 2, 400


def reranker_signal(name: str) -> str:
    """`llava-onevision` -> `reranker:llava-onevision`, the signal name of that reranker's concept score."""
    return f"{RERANKER_PREFIX}{name}"


def default_weights_path() -> Path:
    """Weights shipped with convis, fitted on all ConViS-Bench pairs (see docs/fusion.md)."""
    return Path(__file__).resolve().parents[1] / "data" / "fusion_default.json"


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
        return {self.signals[i]: float(w) for i, w in zip(idx, self._solve(idx), strict=False)}

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
        """The same normalisers and moments under another penalty (its weights solved afresh)."""
        return replace(self, alpha=alpha, _solved={})

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


# ---------------------------------------------------------------- the non-negative ridge


def nonneg_ridge(cov: np.ndarray, cross: np.ndarray, alpha: float) -> np.ndarray:
    """argmin_w  w'(cov + alpha I)w - 2 cross'w  subject to w >= 0, via NNLS on the Cholesky factor."""
    # scipy.optimize: ~0.35 s to import, paid by the first fused score only (not by loading weights or by
    # plain queries); a NumPy-only solver would differ in the last bits and reorder tied held-out scores
    from scipy.optimize import nnls

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


# ---------------------------------------------------------------- all concepts


class FusionModel:
    """Per-concept fusion models, loaded from a weights file."""

    def __init__(self, models: Mapping[str, ConceptModel], meta: Mapping | None = None):
        self.models = dict(models)
        self.meta = dict(meta or {})

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

    @classmethod
    def load(cls, path: str | Path) -> FusionModel:
        path = Path(path)
        data = read_json(path, "fusion weights", error=FusionError)
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise FusionError(f"{path}: not a {FORMAT} weights file")
        try:
            models = {c: ConceptModel.from_record(c, r) for c, r in data["concepts"].items()}
        except (KeyError, TypeError, ValueError) as e:
            raise FusionError(f"{path}: malformed fusion weights ({e})") from None
        return cls(models, data.get("meta"))
