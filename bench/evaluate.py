"""Score files in, result rows out: the paper's protocol applied to whatever files were found."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Iterable, Mapping

from bench import paper
from bench.loaders import (
    BenchDataError,
    GtPair,
    HumanRanks,
    PairKey,
    ScoreFile,
    gt_concepts,
    load_pair_scores,
    load_retrieval_scores,
    match_pairs,
)
from bench.metrics import Correlation, Retrieval, correlation, random_retrieval, retrieval


@dataclass(frozen=True)
class CorrelationRow:
    model: str
    kind: str  # paper.CONDITIONED or paper.GLOBAL
    concept: str
    scores: Correlation  # n = pairs matched
    n_gt: int  # pairs the ground truth rates
    # what the paper printed for this model and concept (Table 2 or 3), to show beside ours
    paper_rho: float | None = None
    paper_tau: float | None = None
    paper_name: str | None = None
    paper_decimals: int = 2
    path: str = ""

    def record(self) -> dict:
        return _flat(self)


@dataclass(frozen=True)
class RetrievalRow:
    model: str
    concept: str
    scores: Retrieval  # n = anchors scored
    n_gt: int  # anchors the ground truth ranks
    # what the paper printed for this model and concept (Table 4): recall, precision, F1
    paper: tuple[float, float, float] | None = None
    path: str = ""

    def record(self) -> dict:
        paper_values = dict(zip(("paper_recall", "paper_precision", "paper_f1"), self.paper or (None,) * 3))
        return {**_flat(self, drop=("paper", "path")), **paper_values, "path": self.path}


def _flat(row, drop: tuple[str, ...] = ()) -> dict:
    """The row as one flat record: the metric fields take the place of `scores`, in their own order."""
    out: dict = {}
    for f in fields(row):
        if f.name == "scores":
            out.update(asdict(row.scores))
        elif f.name not in drop:
            out[f.name] = getattr(row, f.name)
    return out


# ---------------------------------------------------------------- correlation


def correlation_rows(files: Iterable[ScoreFile], gt: Mapping[PairKey, GtPair]) -> list[CorrelationRow]:
    """One row per (file, concept); a global file is scored against every concept the ground truth rates."""
    rows: list[CorrelationRow] = []
    for f in files:
        rows.extend(file_correlation(f, load_pair_scores(f.path), gt))
    _check_unique((r.kind, r.model, r.concept) for r in rows)
    return rows


def file_correlation(f: ScoreFile, scores: dict[PairKey, float], gt: Mapping[PairKey, GtPair]) -> list[CorrelationRow]:
    kind = paper.GLOBAL if f.concept is None else paper.CONDITIONED
    concepts = gt_concepts(gt) if f.concept is None else [f.concept]
    rows = [_correlation_row(f, kind, c, scores, gt) for c in concepts]
    if not rows or all(r.scores.n == 0 for r in rows):
        raise BenchDataError(f"{f.path}: no pair matches the ground truth (pairs are matched on ordered base names)")
    return rows


def _correlation_row(f: ScoreFile, kind: str, concept: str, scores, gt) -> CorrelationRow:
    matched = match_pairs(scores, gt, concept)
    c = correlation(matched.model, matched.human)
    row = paper.correlation_row(kind, f.model)
    ref = row.values.get(concept) if row else None
    return CorrelationRow(
        f.model, kind, concept, c, matched.n_gt,
        paper_rho=ref[0] if ref else None,
        paper_tau=ref[1] if ref else None,
        paper_name=row.name if row else None,
        paper_decimals=row.decimals if row else 2,
        path=str(f.path),
    )


# ---------------------------------------------------------------- retrieval


def retrieval_rows(files: Iterable[ScoreFile], human: HumanRanks) -> list[RetrievalRow]:
    """One row per (file, concept); a file without a concept is scored against every ranked concept."""
    rows: list[RetrievalRow] = []
    for f in files:
        scores = load_retrieval_scores(f.path)
        concepts = list(human) if f.concept is None else [f.concept]
        file_rows = [_retrieval_row(f, c, scores, human.get(c, {})) for c in concepts]
        if all(r.scores.n == 0 for r in file_rows):
            raise BenchDataError(f"{f.path}: no anchor matches the ground-truth rankings")
        rows.extend(file_rows)
    _check_unique((r.model, r.concept) for r in rows)
    return rows


def _retrieval_row(f: ScoreFile, concept: str, scores, ranks) -> RetrievalRow:
    m = retrieval(ranks, scores)
    ref = paper.paper_retrieval(f.model, concept)
    return RetrievalRow(f.model, concept, m, len(ranks), ref, path=str(f.path))


def random_rows(human: HumanRanks) -> list[RetrievalRow]:
    """The analytical random-choice baseline on this ground truth (only R/P/F1@1 are defined)."""
    nan = float("nan")
    rows = []
    for concept, ranks in human.items():
        s = random_retrieval(ranks)
        ref = paper.paper_random(concept)
        m = Retrieval(s.recall, s.precision, s.f1, nan, nan, nan, nan, nan, len(ranks))
        rows.append(RetrievalRow("random choice", concept, m, len(ranks), ref))
    return rows


def _check_unique(keys: Iterable[tuple]) -> None:
    seen = set()
    for key in keys:
        if key in seen:
            raise BenchDataError(f"two score files give {' / '.join(map(str, key))}; pass one of them")
        seen.add(key)
