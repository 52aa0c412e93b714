"""Score files in, result rows out: the paper's protocol applied to whatever files were found."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field, fields
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
from bench.metrics import Correlation, Retrieval, correlation, random_retrieval, retrieval, scored


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
    paper_source: str | None = None  # paper.PRINTED or paper.RELEASE where there is a paper value

    @property
    def paper_delta_rho(self) -> float | None:
        """Ours minus the paper's rho, None where the paper has no value."""
        return _delta(self.scores.rho, self.paper_rho)

    @property
    def paper_delta_tau(self) -> float | None:
        return _delta(self.scores.tau, self.paper_tau)

    def record(self) -> dict:
        head = _flat(self, drop=("paper_name", "paper_decimals", "path", "paper_source"))
        deltas = {"paper_delta_rho": self.paper_delta_rho, "paper_delta_tau": self.paper_delta_tau}
        tail = {"paper_name": self.paper_name, "paper_source": self.paper_source,
                "paper_decimals": self.paper_decimals, "path": self.path}
        return {**head, **deltas, **tail}


def _delta(ours: float, theirs: float | None) -> float | None:
    return None if theirs is None else ours - theirs


ALL_ANCHORS = "all"  # every anchor and candidate the ground truth ranks
PAPER_SPLIT = "paper split"  # the paper's anchors and candidates, as far as the ground truth ranks them
RANDOM_MODEL = "random choice"


@dataclass(frozen=True)
class RetrievalRow:
    model: str
    concept: str
    scores: Retrieval  # n = anchors scored
    n_gt: int  # anchors the ground truth ranks
    # what the paper printed for this model and concept (Table 4): recall, precision, F1; only where comparable
    paper: tuple[float, float, float] | None = None
    path: str = ""
    anchor_set: str = ALL_ANCHORS  # or PAPER_SPLIT, or "subset <digest>" of the anchors and candidates scored
    # the human ranks the row averages over (anchor -> candidate -> rank), which random choice is computed on
    used_ranks: Mapping[str, Mapping[str, int]] = field(default_factory=dict, compare=False, repr=False)

    def record(self) -> dict:
        paper_values = dict(zip(("paper_recall", "paper_precision", "paper_f1"), self.paper or (None,) * 3,
                                strict=False))
        head = _flat(self, drop=("paper", "path", "anchor_set", "used_ranks"))
        return {**head, **paper_values, "path": self.path, "anchor_set": self.anchor_set}


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
        paper_source=row.source if row else None,
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
    used = scored(ranks, scores)
    label = anchor_set(used, ranks)
    ref = paper.paper_retrieval(f.model, concept) if _comparable(label, ranks) else None
    return RetrievalRow(f.model, concept, retrieval(ranks, scores), len(ranks), ref, str(f.path), label, used)


def anchor_set(used: Mapping[str, Mapping[str, int]], ranks: Mapping[str, Mapping[str, int]]) -> str:
    """Name the anchors and candidates a row averages over, so rows on the same ones can be told apart."""
    if used == ranks:
        return ALL_ANCHORS
    if used and used == scored(ranks, paper.SPLIT):
        return PAPER_SPLIT
    canonical = json.dumps(sorted((a, sorted(c)) for a, c in used.items()))
    return f"subset {hashlib.sha256(canonical.encode()).hexdigest()[:6]}"


def _comparable(label: str, ranks: Mapping[str, Mapping[str, int]]) -> bool:
    # Table 4 averages over the paper's own 133 anchors x 4 candidates: any other set is another quantity
    return label == ALL_ANCHORS and paper.is_split(ranks)


def random_rows(human: HumanRanks, rows: Iterable[RetrievalRow] = ()) -> list[RetrievalRow]:
    """The analytical random-choice baseline (only R/P/F1@1 are defined), per concept on each anchor set the
    model ``rows`` average over, or on everything the ground truth ranks for a concept no row scores.

    Its expected scores follow from each anchor's candidate count and tie size, so a model is only
    measured against chance when both are averaged over the very same anchors and candidates.
    """
    sets: dict[tuple[str, str], Mapping] = {(r.concept, r.anchor_set): r.used_ranks for r in rows}
    out = []
    for concept, ranks in human.items():
        mine = {label: used for (c, label), used in sets.items() if c == concept} or {ALL_ANCHORS: ranks}
        out += [_random_row(concept, label, used, ranks) for label, used in mine.items()]
    return out


def _random_row(concept: str, label: str, used: Mapping, ranks: Mapping) -> RetrievalRow:
    nan = float("nan")
    s = random_retrieval(used)
    m = Retrieval(s.recall, s.precision, s.f1, nan, nan, nan, nan, nan, len(used))
    ref = paper.paper_random(concept) if _comparable(label, ranks) else None
    return RetrievalRow(RANDOM_MODEL, concept, m, len(ranks), ref, "", label, used)


def _check_unique(keys: Iterable[tuple]) -> None:
    seen = set()
    for key in keys:
        if key in seen:
            raise BenchDataError(f"two score files give {' / '.join(map(str, key))}; pass one of them")
        seen.add(key)
