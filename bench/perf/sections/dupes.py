"""Near-duplicates: `convis dupes` grouping synthetic units, a tenth of the files copied; and its peak memory at the
lowest threshold, where a search of every pair in range would hold a number of pairs quadratic in the units."""

from __future__ import annotations

from dataclasses import dataclass

from bench.perf.section import Check, Section, one_table
from bench.perf.targets import DUPES_LOWEST_MB, DUPES_SECONDS


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
    saturated: int = 0  # units with more neighbours in range than are paired
    peak_rss_mb: float = 0.0


HEAD = ["units", "dim", "index", "threshold", "unit pairs", "units saturated", "groups", "copies found", "precision",
        "pair search s", "total s", "peak RSS MB"]


def _row(r: DupesBenchResult) -> list:
    return [f"{r.units:,}", r.dim, r.factory, r.threshold, r.unit_pairs, r.saturated, r.groups, r.recall, r.precision,
            r.search_s, r.total_s, f"{r.peak_rss_mb:.0f}"]


def _checks(rows: list[DupesBenchResult]) -> list[Check]:
    fast = [("100k units grouped as near-duplicates in under a minute", f"{r.total_s:.1f} s for {r.units:,}",
             r.total_s < DUPES_SECONDS) for r in rows if r.units >= 100_000]
    return fast + [(f"30k units at the lowest threshold grouped in under {DUPES_LOWEST_MB:,} MB",
                    f"{r.peak_rss_mb:.0f} MB for {r.units:,} at {r.threshold:g}", r.peak_rss_mb < DUPES_LOWEST_MB)
                   for r in rows if r.units >= 30_000 and r.threshold < 0.51]


SECTION = Section(
    "dupes", "`convis dupes` grouping 100,000 synthetic units (smoke: the first --sizes), a tenth of the files "
             "copied: pair search and groups, seconds and the copies found; then 30,000 at the lowest threshold, "
             "its peak memory",
    DupesBenchResult, "bench.perf.dupes:run_dupes", one_table("Near-duplicates", HEAD, _row), checks=_checks,
    needs_clips=False)
