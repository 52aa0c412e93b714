"""The targets a run is judged against: the numbers, in one place; each section judges its own rows by them
(``checks`` in bench/perf/sections/<name>.py)."""

from __future__ import annotations

from dataclasses import dataclass

TARGET_PIPELINE = 0.8  # end-to-end throughput over the slower of decode-only and embed-only
TARGET_SAMPLED_SPEEDUP = 10.0
TARGET_P50_MS = 5.0
TARGET_RECALL = 0.95
TARGET_FILTER_RATIO = 2.0  # a filter keeping 10%: its median latency against the same index unfiltered
TARGET_LONG_VIDEO_MB = 1536  # one long video, whole or in segments: flat in its length
TARGET_CACHE_SPEEDUP = 100.0
TARGET_HELP_S = 0.3  # `convis --help`: imports no model code
TARGET_QUERY_S = 0.5  # `convis query` with an indexed anchor, `info`, `ls`: a catalog read and a FAISS search
TARGET_QUERY_MB = 250
TARGET_INSTANT_S = 0.5  # `convis models`, and every other --help: no index, no model
TARGET_TEXT_RATIO = 1.5  # a text search, a change, a window asked again: against the indexed-anchor query's wall
TARGET_TEXT_MB = 300
TARGET_REFUSAL_S = 2.0  # `convis diff` without the LMM's weights: its one-line refusal
TARGET_LISTEN_S = 2.0  # `convis serve` until /health answers
TARGET_WARM_SEARCH_S = 1.5  # the first text search over HTTP once /health says warm
TARGET_TWO_WORKER_SPEEDUP = 1.8  # one long file, 2 decode workers against 1
TARGET_WORKER_MB = 1024  # peak RSS of any one decode worker
TARGET_HEALTH_P99_MS = 50.0  # /health under the serve section's load
DUPES_SECONDS = 60  # 100k units grouped as near-duplicates
DUPES_LOWEST_MB = 2048  # peak RSS of 30k units grouped at the lowest threshold
# Lance, the scale-out store (its largest measured size): one query, the serving process, an append's visibility
TARGET_LANCE_P50_MS = 50.0
TARGET_STORE_RECALL = 0.95  # recall@10 against an exact search
TARGET_LANCE_SERVE_MB = 2048
TARGET_LANCE_APPEND_S = 60.0
TARGET_QUERY_SHARE = 1.5  # a query's p50 under load, over its time alone times the queries in flight per core


@dataclass(frozen=True)
class CliTarget:
    """What one command-line row must meet; None: no such limit."""

    seconds: float | None = None  # median wall, at most
    ratio: float | None = None  # median wall over the indexed-anchor query's, at most
    mb: float | None = None  # largest max RSS, below


CLI_TARGETS = {  # by the rows' keys (bench/perf/cli_session.py)
    "help": CliTarget(TARGET_HELP_S),
    "bench-help": CliTarget(TARGET_INSTANT_S),
    "search-help": CliTarget(TARGET_INSTANT_S),
    "models": CliTarget(TARGET_INSTANT_S),
    "query": CliTarget(TARGET_QUERY_S, mb=TARGET_QUERY_MB),
    "info": CliTarget(TARGET_QUERY_S, mb=TARGET_QUERY_MB),
    "ls": CliTarget(TARGET_QUERY_S, mb=TARGET_QUERY_MB),
    "search": CliTarget(ratio=TARGET_TEXT_RATIO, mb=TARGET_TEXT_MB),
    "search-concept": CliTarget(ratio=TARGET_TEXT_RATIO, mb=TARGET_TEXT_MB),
    "change": CliTarget(ratio=TARGET_TEXT_RATIO, mb=TARGET_TEXT_MB),
    "window-again": CliTarget(ratio=TARGET_TEXT_RATIO),
    "diff-refusal": CliTarget(TARGET_REFUSAL_S),
    "serve-listening": CliTarget(TARGET_LISTEN_S),
    "serve-search": CliTarget(TARGET_WARM_SEARCH_S),
}
CLI_BASELINE = "query"  # the row every other is compared with: an indexed anchor's query
