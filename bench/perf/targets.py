"""The targets a run is judged against, each as (target, what was measured, met?) from the rows."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

from bench.perf.results import (
    CliResult,
    FilterResult,
    IndexingResult,
    RecallResult,
    RerankResult,
    ScalingResult,
    ServeLoadResult,
)

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
TARGET_QUERY_SHARE = 1.5  # a query's p50 under load, over its time alone times the queries in flight per core

Check = tuple[str, str, bool]


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


def find_row(rows: list[IndexingResult], stage: str, way: str, decoder: str,
             threads: str | None = None) -> IndexingResult | None:
    """The row for a stage under a --torch-threads setting; decode rows match any (no torch there)."""
    return next((r for r in rows if (r.stage, r.way, r.decoder) == (stage, way, decoder)
                 and (threads is None or stage == "decode" or r.setting == threads)), None)


def measured_settings(rows: list[IndexingResult]) -> list[tuple[str, str]]:
    """(decoder, --torch-threads setting) pairs that have model rows, in measuring order."""
    return list(dict.fromkeys((r.decoder, r.setting) for r in rows if r.stage != "decode"))


def decode_checks(rows: list[IndexingResult], decoder: str) -> list[Check]:
    decode = find_row(rows, "decode", "sampled", decoder)
    found = []
    for way, label in (("every frame", "every frame (the paper's way)"),
                       ("every frame, streamed", "every frame streamed on one thread")):
        reference = find_row(rows, "decode", way, decoder)
        if decode and reference:
            ratio = reference.seconds / decode.seconds
            found.append((f"{decoder}: sampled decoding >= 10x faster than {label}",
                          f"{ratio:.1f}x ({reference.seconds:.2f} s vs {decode.seconds:.2f} s)",
                          ratio >= TARGET_SAMPLED_SPEEDUP))
    return found


def pipeline_checks(rows: list[IndexingResult], decoder: str, threads: str) -> list[Check]:
    get = partial(find_row, rows, decoder=decoder, threads=threads)
    decode, embed, pipeline = get("decode", "sampled"), get("embed", "sampled"), get("end-to-end", "sampled")
    if not (decode and embed and pipeline):
        return []
    limit = min(decode.frames_per_s, embed.frames_per_s)
    share = pipeline.frames_per_s / limit
    return [(f"{decoder}, torch threads {threads}: end-to-end >= 80% of min(decode, embed)",
             f"{pipeline.frames_per_s:.1f} / {limit:.1f} frames/s = {share:.0%}", share >= TARGET_PIPELINE)]


def recall_checks(rows: list[RecallResult]) -> list[Check]:
    largest = max((r.vectors for r in rows), default=0)
    auto = [r for r in rows if r.vectors == largest and "(auto)" in r.index and r.batch == 1]
    return [(f"auto index at {largest:,} x {r.dim}: one query p50 <= 5 ms, recall@100 >= 0.95",
             f"{r.factory} {r.params}".strip() + f": p50 {r.p50_ms:.2f} ms, recall@100 {r.recall_at_100:.3f}",
             r.p50_ms <= TARGET_P50_MS and r.recall_at_100 >= TARGET_RECALL) for r in auto]


def filter_checks(rows: list[FilterResult]) -> list[Check]:
    """Every filtered search finds what an exact search of its rows finds; at 10% it costs at most 2x unfiltered."""
    found = [(f"{r.index} index, filter keeping {r.keep:.0%}: recall@10 against exact filtered = 1.000",
              f"{r.recall_at_10:.3f}", r.recall_at_10 >= 1.0) for r in rows]
    return found + [(f"{r.index} index, filter keeping 10%: p50 <= {TARGET_FILTER_RATIO:g}x unfiltered",
                     f"{r.p50_ms:.2f} / {r.unfiltered_p50_ms:.2f} ms = {r.ratio:.1f}x", r.ratio <= TARGET_FILTER_RATIO)
                    for r in rows if r.keep == 0.1]


def rerank_checks(rows: list[RerankResult]) -> list[Check]:
    found = []
    for r in rows:
        found.append(("cached rerank repeat >= 100x faster", f"{r.speedup:.0f}x ({r.first_s:.2f} s -> "
                      f"{r.repeat_s * 1e3:.1f} ms)", r.speedup >= TARGET_CACHE_SPEEDUP and r.repeat_model_pairs == 0))
        found.append(("rerank decodes each clip once per command", f"{r.decodes} decodes for {r.pairs + 1} clips",
                      r.decodes == r.pairs + 1 and r.repeat_decodes == 0))
    return found


def cli_checks(rows: list[CliResult]) -> list[Check]:
    base = next((r for r in rows if r.key == CLI_BASELINE), None)
    found = [cli_check(r, CLI_TARGETS[r.key], base) for r in rows if r.key in CLI_TARGETS]
    return [check for check in found if check is not None]


def cli_check(r: CliResult, target: CliTarget, base: CliResult | None) -> Check | None:
    """One row against its target; None when the target is only relative and the baseline was not measured."""
    ratio = r.median_s / base.median_s if base is not None and base.median_s > 0 else None
    wanted, met = [], True
    if target.seconds is not None:
        wanted.append(f"median <= {target.seconds:g} s")
        met &= r.median_s <= target.seconds
    if target.ratio is not None and ratio is not None:
        wanted.append(f"median <= {target.ratio:g}x the indexed-anchor query's")
        met &= ratio <= target.ratio
    if target.mb is not None:
        wanted.append(f"max RSS < {target.mb:g} MB")
        met &= r.peak_rss_mb < target.mb
    if not wanted:
        return None
    measured = (f"median {r.median_s:.3f} s of {r.runs} ({r.min_s:.3f}-{r.max_s:.3f})"
                + (f" = {ratio:.2f}x" if ratio is not None and target.ratio is not None else "")
                + f", max RSS {r.peak_rss_mb:.0f} MB")
    return f"`{r.command}`: {', '.join(wanted)}", measured, met


def long_video_checks(rows: list[IndexingResult]) -> list[Check]:
    return [(f"long video ({r.decoder}) peaks below {TARGET_LONG_VIDEO_MB / 1024:g} GB RSS", f"{r.peak_rss_mb:.0f} MB",
             r.peak_rss_mb < TARGET_LONG_VIDEO_MB) for r in rows]


def scaling_checks(rows: list[ScalingResult]) -> list[Check]:
    found = []
    two = next((r for r in rows if r.workers == 2), None)
    if two is not None:
        found.append((f"one long file: 2 decode workers >= {TARGET_TWO_WORKER_SPEEDUP:g}x faster than 1",
                      f"{two.speedup:.2f}x ({two.seconds:.2f} s against {two.seconds * two.speedup:.2f} s)",
                      two.speedup >= TARGET_TWO_WORKER_SPEEDUP))
    if rows:
        peak = max(r.worker_peak_mb for r in rows)
        found.append((f"one long file: every decode worker peaks below {TARGET_WORKER_MB / 1024:g} GB RSS",
                      f"{peak:.0f} MB at most", peak < TARGET_WORKER_MB))
    return found


def serve_checks(rows: list[ServeLoadResult]) -> list[Check]:
    """/health's p99 under load, and a query's p50 under load against its share of the cores: its time alone
    times the queries in flight per core (at least one)."""
    found = []
    health = _serve_row(rows, "/health", "load")
    if health is not None:
        found.append((f"/health p99 under load < {TARGET_HEALTH_P99_MS:g} ms", f"{health.p99_ms:.1f} ms",
                      health.p99_ms < TARGET_HEALTH_P99_MS))
    query, alone = _serve_row(rows, "/query", "load"), _serve_row(rows, "/query", "alone")
    if query is not None and alone is not None:
        share = max(1.0, query.in_flight / max(1, query.cores))
        bound = TARGET_QUERY_SHARE * alone.p50_ms * share
        found.append((f"/query p50 under load <= {TARGET_QUERY_SHARE:g}x its p50 alone x queries in flight per core",
                      f"{query.p50_ms:.0f} ms; bound {TARGET_QUERY_SHARE:g} x {alone.p50_ms:.0f} ms x "
                      f"{share:.2f} ({query.in_flight:.1f} in flight on {query.cores} cores) = {bound:.0f} ms",
                      query.p50_ms <= bound))
    return found


def _serve_row(rows: list[ServeLoadResult], route: str, phase: str) -> ServeLoadResult | None:
    return next((r for r in rows if r.route == route and r.phase == phase), None)
