"""FAISS in RAM against Lance on disk: build, an append of 100k, query latency, recall@10, a serving process's RSS."""

from __future__ import annotations

from dataclasses import dataclass

from bench.perf.section import Check, Section, one_table
from bench.perf.targets import (
    TARGET_LANCE_APPEND_S,
    TARGET_LANCE_P50_MS,
    TARGET_LANCE_SERVE_MB,
    TARGET_STORE_RECALL,
)


@dataclass(frozen=True)
class StoreResult:
    vectors: int  # rows before the append
    dim: int
    engine: str  # "FAISS" (the index in RAM) or "Lance" (a table on disk)
    index: str  # what it built, e.g. "IVF2048,Flat" or "IVF_RQ 1024 x 1 bit"
    params: str  # search-time settings, e.g. "nprobe=16" or "nprobes=32 refine=10"
    build_s: float  # the first `vectors` rows, to a file a reader opens
    appended: int
    append_visible_s: float  # from the append's start until a newly opened reader holds every appended row
    full_rebuild: bool  # whether the append retrained the ANN index (FAISS: rebuilt from every row)
    reindex_s: float  # Lance: the index work after the append (adding its rows, or retraining); FAISS: none apart
    queries: int  # timed one by one, after the append
    p50_ms: float
    p99_ms: float
    recall_at_10: float  # against an exact search of every row
    serve_rss_mb: float  # peak RSS of a fresh process that opens the store and answers the queries
    disk_mb: float
    peak_rss_mb: float = 0.0  # the measuring process


HEAD = ["vectors", "engine", "index", "search params", "build s", "append", "visible after s", "full rebuild",
        "index update s", "queries", "p50 ms", "p99 ms", "recall@10", "serving RSS MB", "disk MB"]


def _row(r: StoreResult) -> list:
    return [f"{r.vectors:,}", r.engine, r.index, r.params or "-", f"{r.build_s:.1f}", f"{r.appended:,}",
            f"{r.append_visible_s:.1f}", "yes" if r.full_rebuild else "no",
            f"{r.reindex_s:.1f}" if r.engine == "Lance" else "-", r.queries,
            f"{r.p50_ms:.2f}", f"{r.p99_ms:.2f}", f"{r.recall_at_10:.3f}", f"{r.serve_rss_mb:.0f}",
            f"{r.disk_mb:.0f}"]


def store_checks(rows: list[StoreResult]) -> list[Check]:
    """The Lance row of the largest size against the scale-out targets."""
    lance = [r for r in rows if r.engine == "Lance"]
    if not lance:
        return []
    r = max(lance, key=lambda row: row.vectors)
    at = f"Lance at {r.vectors:,} x {r.dim}"
    return [
        (f"{at}: one query p50 <= {TARGET_LANCE_P50_MS:g} ms at recall@10 >= {TARGET_STORE_RECALL:g}",
         f"p50 {r.p50_ms:.2f} ms, recall@10 {r.recall_at_10:.3f} ({r.params})",
         r.p50_ms <= TARGET_LANCE_P50_MS and r.recall_at_10 >= TARGET_STORE_RECALL),
        (f"{at}: the serving process under {TARGET_LANCE_SERVE_MB / 1024:g} GB RSS", f"{r.serve_rss_mb:.0f} MB",
         r.serve_rss_mb < TARGET_LANCE_SERVE_MB),
        (f"{at}: {r.appended:,} appended rows visible in < {TARGET_LANCE_APPEND_S:g} s with no full rebuild",
         f"{r.append_visible_s:.1f} s, " + ("retrained" if r.full_rebuild else "no rebuild"),
         r.append_visible_s < TARGET_LANCE_APPEND_S and not r.full_rebuild),
    ]


SECTION = Section(
    "store", "FAISS (RAM) against Lance (disk) on clustered synthetic vectors at each --sizes (--dim): build, an "
             "append of 100k (or half the rows), query p50/p99, recall@10 against exact, a serving process's RSS",
    StoreResult, "bench.perf.store:run_store", one_table("FAISS and Lance", HEAD, _row), checks=store_checks,
    needs_clips=False)
