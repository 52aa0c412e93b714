"""Near-duplicates: `convis dupes` grouping synthetic units, a tenth of the files copied."""

from __future__ import annotations

from dataclasses import dataclass

from bench.perf.section import Check, Section, one_table
from bench.perf.targets import DUPES_SECONDS


@dataclass(frozen=True)
class DupesBenchResult:
    """``dupes`` on synthetic units: the range search and the whole grouping, with the planted copies found."""

    units: int
    dim: int
    factory: str
    threshold: float
    unit_pairs: int
    groups: int
    recall: float  # of the planted copy file pairs
    precision: float
    search_s: float
    total_s: float


HEAD = ["units", "dim", "index", "threshold", "unit pairs", "groups", "copies found", "precision", "range search s",
        "total s"]


def _row(r: DupesBenchResult) -> list:
    return [f"{r.units:,}", r.dim, r.factory, r.threshold, r.unit_pairs, r.groups, r.recall, r.precision, r.search_s,
            r.total_s]


def _checks(rows: list[DupesBenchResult]) -> list[Check]:
    return [("100k units grouped as near-duplicates in under a minute", f"{r.total_s:.1f} s for {r.units:,}",
             r.total_s < DUPES_SECONDS) for r in rows if r.units >= 100_000]


SECTION = Section(
    "dupes", "`convis dupes` grouping 100,000 synthetic units (smoke: the first --sizes), a tenth of the files "
             "copied: range search and groups, seconds and the copies found",
    DupesBenchResult, "bench.perf.dupes:run_dupes", one_table("Near-duplicates", HEAD, _row), checks=_checks,
    needs_clips=False)
