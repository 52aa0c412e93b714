"""Filtered search: a --where filter's vector search against an exact search of the rows it keeps."""

from __future__ import annotations

from dataclasses import dataclass

from bench.perf.section import Check, Section, one_table, rounded
from bench.perf.targets import TARGET_FILTER_RATIO


@dataclass(frozen=True)
class FilterResult:
    """A filter's search on one index kind: recall@10 against an exact search of the rows it keeps, and its
    median latency beside the same index's unfiltered one."""

    vectors: int
    dim: int
    index: str  # "exact", "IVF", "HNSW"
    factory: str
    params: str
    keep: float  # the share of the units the filter keeps
    queries: int
    recall_at_10: float
    p50_ms: float
    unfiltered_p50_ms: float
    build_s: float
    first_ms: float = 0.0  # a filter's first query (its kept rows searched in place)
    second_ms: float = 0.0  # its second (the kept rows gathered in half precision for the next ones)
    runs: int = 1  # latencies are the median over this many runs
    cpu_p50_ms: float = 0.0  # the searching thread's CPU time: what the wall clock counts less waiting for a core
    unfiltered_cpu_p50_ms: float = 0.0

    @property
    def ratio(self) -> float:
        return self.p50_ms / self.unfiltered_p50_ms if self.unfiltered_p50_ms > 0 else float("inf")

    @property
    def cpu_ratio(self) -> float:
        return self.cpu_p50_ms / self.unfiltered_cpu_p50_ms if self.unfiltered_cpu_p50_ms > 0 else float("inf")


HEAD = ["vectors", "dim", "index", "factory", "search params", "filter keeps", "queries", "recall@10 vs exact",
        "p50 ms", "unfiltered p50 ms", "x unfiltered", "CPU p50 ms", "unfiltered CPU p50 ms", "x unfiltered (CPU)",
        "first query ms", "second query ms", "runs", "build s"]


def _row(r: FilterResult) -> list:
    return [f"{r.vectors:,}", r.dim, r.index, r.factory, r.params or "-", f"{r.keep:.0%}", r.queries,
            f"{r.recall_at_10:.3f}", f"{r.p50_ms:.2f}", f"{r.unfiltered_p50_ms:.2f}", f"{r.ratio:.1f}",
            f"{r.cpu_p50_ms:.2f}", f"{r.unfiltered_cpu_p50_ms:.2f}", f"{r.cpu_ratio:.1f}", f"{r.first_ms:.1f}",
            f"{r.second_ms:.1f}", r.runs, f"{r.build_s:.1f}"]


def filter_checks(rows: list[FilterResult]) -> list[Check]:
    """Every filtered search finds what an exact search of its rows finds; at 10% it costs at most 2x unfiltered."""
    found = [(f"{r.index} index, filter keeping {r.keep:.0%}: recall@10 against exact filtered = 1.000",
              f"{r.recall_at_10:.3f}", r.recall_at_10 >= 1.0) for r in rows]
    return found + [(f"{r.index} index, filter keeping 10%: p50 <= {TARGET_FILTER_RATIO:g}x unfiltered",
                     f"{r.p50_ms:.2f} / {r.unfiltered_p50_ms:.2f} ms = {r.ratio:.1f}x", r.ratio <= TARGET_FILTER_RATIO)
                    for r in rows if r.keep == 0.1]


SECTION = Section(
    "filter", "a --where filter's vector search on 100,000 clustered vectors (smoke: the first --sizes) in exact, "
              "IVF and HNSW indices, keeping 1%, 10% and 50%: recall@10 against an exact search of the kept rows, "
              "and latency against the same index unfiltered",
    FilterResult, "bench.perf.filtered:run_filter", one_table("Filtered search", HEAD, _row),
    derived=rounded(ratio=3, cpu_ratio=3), checks=filter_checks, needs_clips=False)
