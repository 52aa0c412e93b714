"""Recall: vector search latency and recall@100 of each index kind at every size."""

from __future__ import annotations

from dataclasses import dataclass

from bench.perf.section import Check, Section, one_table
from bench.perf.targets import TARGET_P50_MS, TARGET_RECALL


@dataclass(frozen=True)
class RecallResult:
    vectors: int
    dim: int
    index: str  # what kind, e.g. "exact", "IVF (auto)"
    factory: str
    params: str  # search-time parameters
    batch: int
    queries: int
    threads: int
    p50_ms: float
    p95_ms: float
    recall_at_100: float
    build_s: float
    peak_rss_mb: float = 0.0


HEAD = ["vectors", "index", "factory", "search params", "batch", "queries", "threads", "p50 ms", "p95 ms",
        "recall@100", "build s", "peak RSS MB"]


def _row(r: RecallResult) -> list:
    return [f"{r.vectors:,}", r.index, r.factory, r.params or "-", r.batch, r.queries, r.threads,
            f"{r.p50_ms:.2f}", f"{r.p95_ms:.2f}", f"{r.recall_at_100:.4f}", f"{r.build_s:.1f}", f"{r.peak_rss_mb:.0f}"]


def recall_checks(rows: list[RecallResult]) -> list[Check]:
    largest = max((r.vectors for r in rows), default=0)
    auto = [r for r in rows if r.vectors == largest and "(auto)" in r.index and r.batch == 1]
    return [(f"auto index at {largest:,} x {r.dim}: one query p50 <= 5 ms, recall@100 >= 0.95",
             f"{r.factory} {r.params}".strip() + f": p50 {r.p50_ms:.2f} ms, recall@100 {r.recall_at_100:.3f}",
             r.p50_ms <= TARGET_P50_MS and r.recall_at_100 >= TARGET_RECALL) for r in auto]


SECTION = Section(
    "recall", "vector search latency and recall@100 of each index kind at every size", RecallResult,
    "bench.perf.search:run_recall", one_table("Recall", HEAD, _row), checks=recall_checks, needs_clips=False)
