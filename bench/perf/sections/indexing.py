"""Indexing: decode, embed and end-to-end throughput, ours next to the paper's every-frame extraction."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

from bench.perf.section import Check, Section, ratio, rounded, table
from bench.perf.targets import TARGET_PIPELINE, TARGET_SAMPLED_SPEEDUP


@dataclass(frozen=True)
class IndexingResult:
    stage: str  # "decode", "embed", "end-to-end"
    way: str  # "sampled" (ours) or "every frame" (the reference feature extraction)
    decoder: str
    indexer: str
    clips: int
    frames: int  # frames handed to the model
    seconds: float
    detail: str = ""
    peak_rss_mb: float = 0.0
    cpu_s: float = 0.0  # CPU time of the timed block, workers included
    torch_threads: int = 0  # torch's intra-op threads in the measuring process
    setting: str = ""  # the --torch-threads entry it was measured under ("default": as convis runs)

    @property
    def frames_per_s(self) -> float:
        return ratio(self.frames, self.seconds)

    @property
    def clips_per_min(self) -> float:
        return ratio(60 * self.clips, self.seconds)


HEAD = ["stage", "way", "decoder", "indexer", "clips", "frames", "seconds", "frames/s", "clips/min", "CPU s",
        "cores busy", "torch threads", "peak RSS MB", "detail"]
RATIO_HEAD = ["decoder", "torch threads", "decode: every frame / sampled", "decode: every frame streamed / sampled",
              "end-to-end: every frame / sampled", "end-to-end / min(decode, embed)"]
RATES = rounded(frames_per_s=3, clips_per_min=3)  # the long video's rows have them too


def row(r: IndexingResult) -> list:
    return [r.stage, r.way, r.decoder, r.indexer, r.clips, r.frames, f"{r.seconds:.2f}", f"{r.frames_per_s:.1f}",
            f"{r.clips_per_min:.1f}", f"{r.cpu_s:.1f}", f"{r.cpu_s / r.seconds:.2f}" if r.seconds else "",
            "-" if r.stage == "decode" else r.torch_threads, f"{r.peak_rss_mb:.0f}", r.detail]


def _ratio_rows(rows: list[IndexingResult]) -> list[list]:
    out = []
    for decoder, threads in measured_settings(rows):
        get = partial(find_row, rows, decoder=decoder, threads=threads)
        speedup = lambda a, b: f"{b.clips_per_min / a.clips_per_min:.2f}x" if a and b else ""  # noqa: E731
        decode, embed, pipe = get("decode", "sampled"), get("embed", "sampled"), get("end-to-end", "sampled")
        share = f"{pipe.frames_per_s / min(decode.frames_per_s, embed.frames_per_s):.0%}" \
            if decode and embed and pipe else ""
        reference = find_row(rows, "end-to-end", "every frame", decoder)  # measured at one thread setting
        out.append([decoder, threads, speedup(get("decode", "every frame"), decode),
                    speedup(get("decode", "every frame, streamed"), decode), speedup(reference, pipe), share])
    return out


def _page(rows: list[IndexingResult]) -> list[str]:
    return ["## Indexing\n", table(HEAD, [row(r) for r in rows]), table(RATIO_HEAD, _ratio_rows(rows))]


def _checks(rows: list[IndexingResult]) -> list[Check]:
    found = [check for decoder in dict.fromkeys(r.decoder for r in rows) for check in decode_checks(rows, decoder)]
    return found + [check for decoder, threads in measured_settings(rows)
                    for check in pipeline_checks(rows, decoder, threads)]


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
            speedup = reference.seconds / decode.seconds
            found.append((f"{decoder}: sampled decoding >= 10x faster than {label}",
                          f"{speedup:.1f}x ({reference.seconds:.2f} s vs {decode.seconds:.2f} s)",
                          speedup >= TARGET_SAMPLED_SPEEDUP))
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


SECTION = Section(
    "indexing", "decode, embed and end-to-end throughput, ours next to the paper's every-frame extraction",
    IndexingResult, "bench.perf.indexing:run_indexing", _page, derived=RATES, checks=_checks)
