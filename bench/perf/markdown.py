"""The report as a markdown page: one table per part, the targets, and how it was measured."""

from __future__ import annotations

from functools import partial

from bench.perf.report import PerfReport, checks
from bench.perf.results import (
    CliResult,
    DescribeResult,
    IndexingResult,
    LmmRerankResult,
    RecallResult,
    RerankResult,
    ScalingResult,
    ServeLoadResult,
)
from bench.perf.targets import CLI_BASELINE, find_row, measured_settings

_INDEXING_HEAD = ["stage", "way", "decoder", "indexer", "clips", "frames", "seconds", "frames/s", "clips/min",
                  "CPU s", "cores busy", "torch threads", "peak RSS MB", "detail"]
_RATIO_HEAD = ["decoder", "torch threads", "decode: every frame / sampled",
               "decode: every frame streamed / sampled", "end-to-end: every frame / sampled",
               "end-to-end / min(decode, embed)"]
_RECALL_HEAD = ["vectors", "index", "factory", "search params", "batch", "queries", "threads", "p50 ms", "p95 ms",
                "recall@100", "build s", "peak RSS MB"]
_OCR_HEAD = ["clip", "size", "runtime", "frames", "lines", "seconds", "frames/s", "CPU seconds", "frames/CPU s"]
_FILTER_HEAD = ["vectors", "dim", "index", "factory", "search params", "filter keeps", "queries", "recall@10 vs exact",
                "p50 ms", "unfiltered p50 ms", "x unfiltered", "CPU p50 ms", "unfiltered CPU p50 ms",
                "x unfiltered (CPU)", "first query ms", "second query ms", "runs", "build s"]
_SCALING_HEAD = ["video", "workers", "segment s", "units", "windows", "frames", "seconds", "speed-up",
                 "worker peak RSS MB"]
_CLI_HEAD = ["command", "runs", "median s", "min s", "max s", "CPU s", "median RSS MB", "max RSS MB",
             "x indexed-anchor query"]
_SERVE_HEAD = ["route", "asked", "requests", "p50 ms", "p99 ms", "max ms", "errors", "503s", "in flight",
               "detail"]
_RERANK_HEAD = ["reranker", "pairs", "load s", "first run s", "s / pair", "decodes", "cached repeat ms",
                "speed-up", "model pairs on repeat", "peak RSS MB"]

_LMM_RERANK_HEAD = ["family", "shape", "device", "batch", "sharing", "pairs", "concepts", "seconds", "pairs/s",
                    "vision calls", "prefix passes", "pair passes", "GPU peak GB", "GPU busy in kernels"]
_DUPES_HEAD = ["units", "dim", "index", "threshold", "unit pairs", "groups", "copies found", "precision",
              "range search s", "total s"]
_DESCRIBE_HEAD = ["family", "shape", "device", "way", "units a batch", "units", "answers", "new tokens",
                  "generate calls", "seconds", "answers/s", "tokens/s", "GPU peak GB", "GPU busy in kernels"]


_SPEECH_HEAD = ["model", "device", "track", "sound s", "voiced s", "spans", "Whisper calls", "lines",
                "sound s/s, VAD", "sound s/s, VAD + Whisper"]


def markdown(report: PerfReport) -> str:
    parts = ["# Performance\n"] + [_run_line(run) for run in report.runs or [report.machine]]
    if report.indexing:
        parts += ["## Indexing\n", _table(_INDEXING_HEAD, [_indexing_row(r) for r in report.indexing])]
        parts += [_table(_RATIO_HEAD, _ratio_rows(report.indexing))]
    if report.long_video:
        parts += ["## One long video\n", _table(_INDEXING_HEAD, [_indexing_row(r) for r in report.long_video])]
    if report.scaling:
        parts += ["## One long file on every core\n", _table(_SCALING_HEAD, [_scaling_row(r) for r in report.scaling])]
    if report.recall:
        parts += ["## Recall\n", _table(_RECALL_HEAD, [_recall_row(r) for r in report.recall])]
    if report.filter:
        parts += ["## Filtered search\n", _table(_FILTER_HEAD, [_filter_row(r) for r in report.filter])]
    if report.ocr:
        parts += ["## On-screen text (ocr)\n", _table(_OCR_HEAD, [_ocr_row(r) for r in report.ocr])]
    if report.dupes:
        parts += ["## Near-duplicates\n", _table(_DUPES_HEAD, [[f"{r.units:,}", r.dim, r.factory, r.threshold,
                                                               r.unit_pairs, r.groups, r.recall, r.precision,
                                                               r.search_s, r.total_s] for r in report.dupes])]
    if report.speech:
        parts += ["## Speech\n", _table(_SPEECH_HEAD, [_speech_row(r) for r in report.speech])]
    if report.rerank:
        parts += ["## Reranking\n", _table(_RERANK_HEAD, [_rerank_row(r) for r in report.rerank])]
    if report.rerank_lmm:
        parts += ["## Reranking, each LMM family\n", _table(_LMM_RERANK_HEAD, [_lmm_row(r) for r in report.rerank_lmm])]
    if report.describe:
        parts += ["## Describing units, each LMM family\n",
                  _table(_DESCRIBE_HEAD, [_describe_row(r) for r in report.describe])]
    if report.cli:
        base = next((r for r in report.cli if r.key == CLI_BASELINE), None)
        parts += ["## Command-line start-up\n", _table(_CLI_HEAD, [_cli_row(r, base) for r in report.cli])]
    if report.serve:
        parts += ["## The server under load\n", _table(_SERVE_HEAD, [_serve_row(r) for r in report.serve])]
    found = checks(report)
    if found:
        parts += ["## Targets\n", _table(["target", "measured", "met"],
                                          [[t, v, "yes" if ok else "**no**"] for t, v, ok in found])]
    parts += ["## How it was measured\n", "\n".join(f"- {n}" for n in report.notes) + "\n"]
    return "\n".join(parts)


def _run_line(m: dict) -> str:
    parts = f" ({', '.join(m['parts'])})" if m.get("parts") else ""
    return (f"Produced by `{m.get('command', 'convis bench perf')}`{parts} on {m['date']}: {m['cpus']} CPUs, "
            f"{m['memory_gb']} GiB RAM, Python {m['python']}, torch {m['torch']} ({m['torch_threads']} threads), "
            f"FAISS {m['faiss']} ({m['faiss_threads']} threads, distance_compute_blas_threshold "
            f"{m['blas_threshold']}); load average {m['load_before']} before, {m.get('load_after', '?')} after.\n")


def _table(head: list[str], rows: list[list]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def _indexing_row(r: IndexingResult) -> list:
    return [r.stage, r.way, r.decoder, r.indexer, r.clips, r.frames, f"{r.seconds:.2f}", f"{r.frames_per_s:.1f}",
            f"{r.clips_per_min:.1f}", f"{r.cpu_s:.1f}", f"{r.cpu_s / r.seconds:.2f}" if r.seconds else "",
            "-" if r.stage == "decode" else r.torch_threads, f"{r.peak_rss_mb:.0f}", r.detail]


def _ratio_rows(rows: list[IndexingResult]) -> list[list]:
    out = []
    for decoder, threads in measured_settings(rows):
        get = partial(find_row, rows, decoder=decoder, threads=threads)
        ratio = lambda a, b: f"{b.clips_per_min / a.clips_per_min:.2f}x" if a and b else ""  # noqa: E731
        decode, embed, pipe = get("decode", "sampled"), get("embed", "sampled"), get("end-to-end", "sampled")
        share = f"{pipe.frames_per_s / min(decode.frames_per_s, embed.frames_per_s):.0%}" \
            if decode and embed and pipe else ""
        reference = find_row(rows, "end-to-end", "every frame", decoder)  # measured at one thread setting
        out.append([decoder, threads, ratio(get("decode", "every frame"), decode),
                    ratio(get("decode", "every frame, streamed"), decode), ratio(reference, pipe), share])
    return out


def _recall_row(r: RecallResult) -> list:
    return [f"{r.vectors:,}", r.index, r.factory, r.params or "-", r.batch, r.queries, r.threads,
            f"{r.p50_ms:.2f}", f"{r.p95_ms:.2f}", f"{r.recall_at_100:.4f}", f"{r.build_s:.1f}", f"{r.peak_rss_mb:.0f}"]


def _ocr_row(r) -> list:
    return [r.clip, r.size, r.provider, r.frames, r.lines, f"{r.seconds:.2f}", f"{r.frames_per_s:.2f}",
            f"{r.cpu_seconds:.2f}", f"{r.frames_per_cpu_s:.2f}"]


def _filter_row(r) -> list:
    return [f"{r.vectors:,}", r.dim, r.index, r.factory, r.params or "-", f"{r.keep:.0%}", r.queries,
            f"{r.recall_at_10:.3f}", f"{r.p50_ms:.2f}", f"{r.unfiltered_p50_ms:.2f}", f"{r.ratio:.1f}",
            f"{r.cpu_p50_ms:.2f}", f"{r.unfiltered_cpu_p50_ms:.2f}", f"{r.cpu_ratio:.1f}", f"{r.first_ms:.1f}",
            f"{r.second_ms:.1f}", r.runs, f"{r.build_s:.1f}"]


def _speech_row(r) -> list:
    return [r.model, r.device, r.track, f"{r.audio_s:g}", f"{r.voiced_s:g}", r.spans, r.calls, r.lines,
            f"{r.vad_audio_per_s:.1f}", f"{r.audio_per_s:.1f}"]


def _scaling_row(r: ScalingResult) -> list:
    return [r.video, r.workers, f"{r.segment_s:g}", r.units, r.windows, r.frames, f"{r.seconds:.2f}",
            f"{r.speedup:.2f}x", f"{r.worker_peak_mb:.0f}"]


def _cli_row(r: CliResult, base: CliResult | None) -> list:
    ratio = f"{r.median_s / base.median_s:.2f}x" if base is not None and base.median_s > 0 else ""
    return [f"`{r.command}`", r.runs, f"{r.median_s:.3f}", f"{r.min_s:.3f}", f"{r.max_s:.3f}", f"{r.cpu_s:.3f}",
            f"{r.median_rss_mb:.0f}", f"{r.peak_rss_mb:.0f}", ratio]


def _serve_row(r: ServeLoadResult) -> list:
    return [f"`{r.route}`", r.phase, r.requests, f"{r.p50_ms:.1f}", f"{r.p99_ms:.1f}", f"{r.max_ms:.1f}", r.errors,
            r.busy, f"{r.in_flight:.1f}" if r.phase == "load" else "", r.detail]


def _rerank_row(r: RerankResult) -> list:
    return [r.reranker, r.pairs, f"{r.load_s:.2f}", f"{r.first_s:.2f}", f"{r.per_pair_s:.3f}", r.decodes,
            f"{r.repeat_s * 1e3:.1f}", f"{r.speedup:.0f}x", r.repeat_model_pairs, f"{r.peak_rss_mb:.0f}"]


def _maybe(value, form: str = "{}") -> str:
    return "n/a" if value is None else form.format(value)


def _lmm_row(r: LmmRerankResult) -> list:
    return [r.family, r.shape, r.device, r.batch, r.share, r.pairs, r.concepts, f"{r.seconds:.2f}",
            f"{r.pairs_per_s:.2f}", _maybe(r.vision_calls), _maybe(r.prefix_passes), _maybe(r.pair_passes),
            _maybe(r.gpu_peak_gb, "{:.1f}"), _maybe(r.kernel_share, "{:.0%}")]


def _describe_row(r: DescribeResult) -> list:
    return [r.family, r.shape, r.device, r.way, r.batch, r.units, r.answers, r.tokens, r.generate_calls,
            f"{r.seconds:.2f}", f"{r.answers_per_s:.2f}", f"{r.tokens_per_s:.1f}", _maybe(r.gpu_peak_gb, "{:.1f}"),
            _maybe(r.kernel_share, "{:.0%}")]
