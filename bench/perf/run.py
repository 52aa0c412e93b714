"""A whole `convis bench perf` run: the parts it can measure, and measuring those a run asks for."""

from __future__ import annotations

import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable

from bench.perf.cli_session import run_cli
from bench.perf.config import Footage, PerfConfig, Progress
from bench.perf.dupes import run_dupes
from bench.perf.filtered import run_filter
from bench.perf.footage import list_clips, make_clips
from bench.perf.indexing import run_indexing
from bench.perf.lmm_describe import run_lmm_describe
from bench.perf.lmm_rerank import run_lmm_rerank
from bench.perf.long_video import run_long_video
from bench.perf.measuring import load_average, machine_info
from bench.perf.notes import notes
from bench.perf.ocr import run_ocr
from bench.perf.real_shape import SHAPES, require_cuda
from bench.perf.report import PARTS, PerfReport
from bench.perf.rerank import run_rerank
from bench.perf.scaling import run_scaling
from bench.perf.search import run_recall
from bench.perf.serve_load import run_serve_load
from bench.perf.speech import run_speech

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Section:
    """One part of a run: the rows it measures and how a run chooses it."""

    measure: Callable[[PerfConfig, Footage, Progress], list]
    description: str
    needs_clips: bool = True  # it measures the clips folder, so a run choosing it refuses an empty one
    chosen_by: Callable[[PerfConfig], bool] | None = None  # None: named in --sections

    def chosen(self, name: str, config: PerfConfig) -> bool:
        return self.chosen_by(config) if self.chosen_by else name in config.sections


# keyed by the PerfReport field each fills, in measuring order
SECTIONS: dict[str, Section] = {
    "indexing": Section(run_indexing, "decode, embed and end-to-end throughput, ours next to the paper's "
                                      "every-frame extraction"),
    "recall": Section(run_recall, "vector search latency and recall@100 of each index kind at every size",
                      needs_clips=False),
    "filter": Section(run_filter, "a --where filter's vector search on 100,000 clustered vectors (smoke: the first "
                                  "--sizes) in exact, IVF and HNSW indices, keeping 1%, 10% and 50%: recall@10 against "
                                  "an exact search of the kept rows, and latency against the same index unfiltered",
                      needs_clips=False),
    "dupes": Section(run_dupes, "`convis dupes` grouping 100,000 synthetic units (smoke: the first --sizes), a tenth "
                                "of the files copied: range search and groups, seconds and the copies found",
                     needs_clips=False),
    "rerank": Section(run_rerank, "reranking cost, cold and again from the score cache"),
    "rerank_lmm": Section(run_lmm_rerank, "each LMM family's pairs/s at batch 1 and its default batch, prompt "
                                          "sharing on and off, its work counts, GPU memory and kernel share "
                                          "(--shape)", chosen_by=lambda config: "rerank" in config.sections),
    "describe": Section(run_lmm_describe, "each LMM family's captions/s and generated tokens/s on the describe "
                                          "path, one request a call and every question at once (--shape)"),
    "cli": Section(run_cli, "the demo's commands on the demo index (out/demo-index, built when absent) as fresh "
                            "processes: median wall seconds and RSS, and each against a query whose anchor is "
                            "indexed; `convis serve` until /health answers, and its first text search once warm",
                   needs_clips=False),
    "serve": Section(run_serve_load, "`convis serve` over a copy of the examples' index: each route alone, then 20 "
                                     "client threads asking /query, /search, /videos and /health in turn "
                                     "(--serve-requests each) while index runs add files: p50/p99/max, errors, 503s",
                     needs_clips=False),
    "scaling": Section(run_scaling, "one long file decoded by 1..N workers (N: the cores): wall seconds, speed-up "
                                    "and the largest worker's peak RSS (--long-video, else a generated 10-minute "
                                    "720p file; --segment units, default 10 s)", needs_clips=False),
    "ocr": Section(run_ocr, "the ocr indexer on the clips (a smoke run: the first), read as an index run reads "
                            "them: frames/s in wall and in CPU time, lines found"),
    "speech": Section(run_speech, "the speech indexer on a generated minute of sound (espeak-ng speech, silences, "
                                  "tones; and silence alone): seconds of sound a second for silero-vad alone and with "
                                  "a tiny random Whisper on the voiced spans, and the spans it was handed",
                      needs_clips=False),
    "long_video": Section(run_long_video, "peak memory of indexing one long video, whole and in segments",
                          needs_clips=False, chosen_by=lambda config: config.long_video is not None),
}


def section_names() -> tuple[str, ...]:
    """The parts ``--sections`` can name (the long video is chosen by ``--long-video``)."""
    return tuple(name for name, section in SECTIONS.items() if section.chosen_by is None)


def run(config: PerfConfig, progress: Progress = lambda message: None,
        command: str = "convis bench perf") -> PerfReport:
    if config.shape not in SHAPES:
        raise ValueError(f"unknown shape {config.shape!r}; use {' or '.join(SHAPES)}")
    if config.shape == "7b":
        require_cuda()  # before any clip is generated or model built
    report = PerfReport(machine_info(), {k: str(v) for k, v in asdict(config).items()})
    chosen = {name: section for name, section in SECTIONS.items() if section.chosen(name, config)}
    with tempfile.TemporaryDirectory(prefix="convis-perf-") as tmp:
        footage = _footage(config, Path(tmp))
        if not footage.clips and any(section.needs_clips for section in chosen.values()):
            raise ValueError(f"no video files in {footage.source}")
        for name, section in chosen.items():
            setattr(report, name, section.measure(config, footage, progress))
    report.machine["load_after"] = load_average()
    report.notes = notes(config)
    parts = [p for p in PARTS if getattr(report, p)]
    report.runs = [{**report.machine, "command": command, "parts": [p.replace("_", " ") for p in parts]}]
    return report


def _footage(config: PerfConfig, scratch: Path) -> Footage:
    source = _clip_folder(config, scratch)
    return Footage(scratch, source, list_clips(source))


def _clip_folder(config: PerfConfig, scratch: Path) -> Path:
    if config.videos is not None:
        return Path(config.videos)
    if config.smoke:
        make_clips(scratch / "generated")
        return scratch / "generated"
    return ROOT / "examples" / "videos"
