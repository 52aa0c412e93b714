"""Concept fusion on ConViS-Bench: build the pair table from released files, cross-validate, compare.

Every reported number comes from held-out folds: the fused score of a pair is predicted by a model
(normalisers, penalty choice and weights) fitted without that pair, and with ``group_by_video`` without
any pair sharing one of its videos. Single signals have nothing to fit; they are scored on the same
folds so that per-fold numbers are paired.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, replace
from typing import Iterable, Mapping, Sequence

import numpy as np
from scipy.stats import kendalltau, spearmanr

from bench import per_concept
from bench.fusion_train import ALPHAS, KINDS, PairTable, fit_fusion, make_folds
from bench.loaders import BenchDataError, GtPair, PairKey, ScoreFile, gt_concepts, load_pair_scores
from bench.metrics import UNPARSEABLE
from indexers.factory import available_indexers
from rerankers.factory import runnable_rerankers
from retrieval.core.signal_kinds import CLIPSCORE, VQASCORE
from retrieval.search.fusion import DESCRIPTIONS, RERANKER_PREFIX, FusionModel, reranker_signal

FUSED = "fused"
SPLITS = {False: "random", True: "video"}  # group_by_video -> split name

# Release folder -> signal name. Global files are keyed by their computed_similarities folder; LMM answers by
# their model folder under computed_conditioned_similarities/<Concept>/ (mPLUG-Owl3 names both kinds).
RELEASE_GLOBAL = {
    "dinov2-large": "dinov2",
    "mPLUG-Owl3-7B-240728": "text",  # SBERT (all-MiniLM-L6-v2) over mPLUG-Owl3 captions = the text indexer
    "clip-vit-large-patch14_mPLUG-Owl3-7B-240728": "clipscore",  # video-caption CLIPScore, not the clip indexer
    "LLaVA-OneVision_mPLUG-Owl3-7B-240728": "vqascore",
}
RELEASE_CONDITIONED = {
    "LLaVA-OneVision-Qwen2-7B": reranker_signal("llava-onevision"),
    "LLaVA-OneVision-Qwen2-0.5B": reranker_signal("llava-onevision-0.5b"),
    "LLaVA-NeXT-Video-7B": reranker_signal("llava-video"),
    "Qwen2.5-VL-7B-Instruct": reranker_signal("qwen2.5-vl"),
    "InternVL2_5-8B": reranker_signal("internvl2.5"),
    "mPLUG-Owl3-7B-240728": reranker_signal("mplug-owl3"),  # refused by convis (rerankers.mplug): bench only
}


def signal_name(f: ScoreFile) -> str:
    """Stable signal name of a score file; unknown folders keep their name (LMM answers get the prefix). A
    concept's file named ``descriptions`` is that concept's description similarity, not an LMM's answer; one of
    a model's per-concept vectors (``<model>-concepts``, ``bench.per_concept``) is their cosine, named as the
    index names those vectors: ``<model>#<concept>``."""
    if f.concept is None or f.model == DESCRIPTIONS:
        return RELEASE_GLOBAL.get(f.model, f.model)
    generic = per_concept.generic_of(f.model)
    if generic is not None:
        return f"{RELEASE_GLOBAL.get(generic, generic)}#{f.concept}"
    return RELEASE_CONDITIONED.get(f.model, reranker_signal(f.model))


def query_time_signals() -> set[str]:
    """Signals convis itself computes when it answers a query: indexer cosines, each concept's description
    similarity, CLIPScore and VQAScore (with captions in the index) and reranker scores."""
    return {*available_indexers(), DESCRIPTIONS, CLIPSCORE, VQASCORE,
            *(reranker_signal(r) for r in runnable_rerankers())}


def is_reranker(signal: str) -> bool:
    return signal.startswith(RERANKER_PREFIX)


# ---------------------------------------------------------------- the table


def build_table(files: Iterable[ScoreFile], gt: Mapping[PairKey, GtPair],
                keep: set[str] | None = None) -> PairTable:
    """One row per rated pair (ordered base names, as the reference matches them).

    A global file is a column of every concept, a conditioned file (an LMM's, a model's per-concept vectors) of
    its own concept. An LMM's 0.0 ("could not parse") becomes missing: the fused score then comes from the other
    signals, not from a made-up 3; a cosine's 0.0 is a value.
    """
    pairs = list(gt)
    concepts = gt_concepts(gt)
    labels = {c: np.array([gt[k].scores.get(c, math.nan) for k in pairs]) for c in concepts}
    columns: dict[str, dict[str, np.ndarray]] = {c: {} for c in concepts}
    for f in files:
        name = signal_name(f)
        if keep is not None and name not in keep:
            continue
        values = _column(load_pair_scores(f.path), pairs, unparseable=is_reranker(name))
        for concept in concepts if f.concept is None else [f.concept]:
            if concept in columns:
                _add_column(columns[concept], name, values, f)
    return PairTable(pairs, labels, columns)


def _column(scores: Mapping[PairKey, float], pairs: Sequence[PairKey], unparseable: bool) -> np.ndarray:
    values = np.array([scores.get(k, math.nan) for k in pairs], dtype=np.float64)
    return np.where(values == UNPARSEABLE, np.nan, values) if unparseable else values


def _add_column(columns: dict[str, np.ndarray], name: str, values: np.ndarray, f: ScoreFile) -> None:
    if name in columns:
        raise BenchDataError(f"two score files give signal {name!r} (second: {f.path}); pass one of them")
    if np.all(np.isnan(values)):
        raise BenchDataError(f"{f.path}: no pair matches the ground truth")
    columns[name] = values


# ---------------------------------------------------------------- cross-validation


@dataclass(frozen=True)
class CvRow:
    concept: str
    split: str  # "random" or "video"
    signal: str  # FUSED or a signal name
    rho: float  # Spearman x100 over all held-out pairs pooled
    tau: float  # Kendall tau-b x100, same pairs
    fold_rho: float  # mean of the per-fold Spearman x100
    fold_sd: float  # their standard deviation
    n: int  # pairs scored
    folds_won: int | None = None  # fused only: folds where it beats the best single signal

    def record(self) -> dict:
        return asdict(self)


@dataclass
class CvResult:
    split: str
    folds: int
    seed: int
    rows: list[CvRow]
    choices: dict[str, list[dict]]  # concept -> per outer fold: kind, alpha, inner rho, training pairs
    train_sizes: list[int] = field(default_factory=list)


def cross_validate(table: PairTable, concepts: Sequence[str], folds: int = 10, seed: int = 0,
                   group_by_video: bool = False, inner_folds: int = 5, kinds: Sequence[str] = KINDS,
                   alphas: Sequence[float] = ALPHAS) -> CvResult:
    """Outer k folds; inside each, the fusion model picks its settings by inner folds of the training part."""
    outer = make_folds(table.pairs, folds, seed, group_by_video)
    rows, choices = [], {}
    for concept in concepts:
        pred, fold_choices = _held_out(table, concept, outer, seed, group_by_video, inner_folds, kinds, alphas)
        rows.extend(_concept_rows(table, concept, outer, pred, SPLITS[group_by_video]))
        choices[concept] = fold_choices
    return CvResult(SPLITS[group_by_video], folds, seed, rows, choices, [len(f.train) for f in outer])


def _held_out(table, concept, outer, seed, group_by_video, inner_folds, kinds, alphas):
    pred = np.full(len(table.pairs), np.nan)
    fold_choices = []
    for fold in outer:
        train = table.take(fold.train)
        model = fit_fusion(train, [concept], kinds=kinds, alphas=alphas, inner_folds=inner_folds, seed=seed,
                           group_by_video=group_by_video)
        test_cols = {s: v[fold.test] for s, v in table.columns[concept].items()}
        pred[fold.test] = model.predict_arrays(concept, test_cols)
        fold_choices.append({**model.meta["choices"][concept], "train_pairs": int(len(fold.train))})
    return pred, fold_choices


def _concept_rows(table: PairTable, concept: str, outer, pred: np.ndarray, split: str) -> list[CvRow]:
    y = table.labels[concept]
    singles = {s: single_scores(s, v) for s, v in table.columns[concept].items()}
    rows = [_row(concept, split, s, x, y, outer) for s, x in singles.items()]
    rows.sort(key=lambda r: -r.rho if math.isfinite(r.rho) else math.inf)
    fused = _row(concept, split, FUSED, pred, y, outer)
    won = _folds_won(pred, singles, y, outer, rows[0].signal) if rows else None
    return [replace(fused, folds_won=won), *rows]


def single_scores(signal: str, values: np.ndarray) -> np.ndarray:
    """A single signal as the paper scores it: an LMM's unparseable answer counts as the neutral 3."""
    return np.where(np.isnan(values), paper_fill(signal), values)


def paper_fill(signal: str) -> float:
    return 3.0 if is_reranker(signal) else math.nan


def _row(concept: str, split: str, signal: str, x: np.ndarray, y: np.ndarray, outer) -> CvRow:
    rho, tau, n = rho_tau(x, y)
    per_fold = [rho_tau(x[f.test], y[f.test])[0] for f in outer]
    per_fold = [r for r in per_fold if math.isfinite(r)]
    mean = float(np.mean(per_fold)) if per_fold else math.nan
    sd = float(np.std(per_fold, ddof=1)) if len(per_fold) > 1 else math.nan
    return CvRow(concept, split, signal, rho, tau, round(mean, 2), round(sd, 2), n)


def rho_tau(x: np.ndarray, y: np.ndarray) -> tuple[float, float, int]:
    """Spearman and Kendall tau-b x100 on the pairs both sides have (NaN = no score / not rated)."""
    ok = ~np.isnan(x) & ~np.isnan(y)
    if ok.sum() < 3 or np.ptp(x[ok]) == 0 or np.ptp(y[ok]) == 0:
        return math.nan, math.nan, int(ok.sum())
    rho, tau = spearmanr(x[ok], y[ok]).statistic, kendalltau(x[ok], y[ok]).statistic
    return round(100 * float(rho), 2), round(100 * float(tau), 2), int(ok.sum())


def _folds_won(pred, singles, y, outer, best: str) -> int:
    return sum(rho_tau(pred[f.test], y[f.test])[0] > rho_tau(singles[best][f.test], y[f.test])[0]
               for f in outer)


# ---------------------------------------------------------------- summaries


def margins(rows: Iterable[CvRow]) -> dict[tuple[str, str], dict]:
    """(split, concept) -> fused rho, best single signal and its rho, and the margin."""
    out: dict[tuple[str, str], dict] = {}
    rows = list(rows)
    for split, concept in dict.fromkeys((r.split, r.concept) for r in rows):
        group = [r for r in rows if (r.split, r.concept) == (split, concept)]
        fused = next(r for r in group if r.signal == FUSED)
        singles = [r for r in group if r.signal != FUSED and math.isfinite(r.rho)]
        best = max(singles, key=lambda r: r.rho) if singles else None
        out[(split, concept)] = {
            "fused_rho": fused.rho, "fused_tau": fused.tau,
            "best_signal": best.signal if best else None, "best_rho": best.rho if best else math.nan,
            "margin": round(fused.rho - best.rho, 2) if best else math.nan,
        }
    return out


def weight_records(model: FusionModel) -> dict[str, dict]:
    """What the final model learned per concept, for tables and JSON."""
    return {
        c: {"normaliser": m.kind, "alpha": m.alpha, "intercept": round(m.intercept, 4), "n_train": m.n_train,
            "weights": {s: round(w, 4) for s, w in m.weights().items()}}
        for c, m in model.models.items()
    }
