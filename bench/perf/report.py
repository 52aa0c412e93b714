"""A run's report: its rows, the targets judged from them, and reports of several runs made one."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Sequence

from bench.perf.ocr import OcrResult
from bench.perf.results import (
    CliResult,
    DescribeResult,
    DupesBenchResult,
    FilterResult,
    IndexingResult,
    LmmRerankResult,
    RecallResult,
    RerankResult,
    ScalingResult,
    ServeLoadResult,
    SpeechResult,
)
from bench.perf.targets import (
    Check,
    cli_checks,
    decode_checks,
    filter_checks,
    long_video_checks,
    measured_settings,
    pipeline_checks,
    recall_checks,
    rerank_checks,
    scaling_checks,
    serve_checks,
)
from retrieval.core.user_files import read_json

DUPES_SECONDS = 60  # the target for grouping 100k units
# the report's row lists, in measuring order
PARTS = ("indexing", "recall", "filter", "dupes", "rerank", "rerank_lmm", "describe", "long_video", "scaling", "cli",
         "serve", "ocr", "speech")


@dataclass
class PerfReport:
    machine: dict
    config: dict
    indexing: list[IndexingResult] = field(default_factory=list)
    recall: list[RecallResult] = field(default_factory=list)
    rerank: list[RerankResult] = field(default_factory=list)
    long_video: list[IndexingResult] = field(default_factory=list)
    scaling: list[ScalingResult] = field(default_factory=list)
    cli: list[CliResult] = field(default_factory=list)
    serve: list[ServeLoadResult] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    runs: list[dict] = field(default_factory=list)  # each run that measured a part: machine facts + command
    rerank_lmm: list[LmmRerankResult] = field(default_factory=list)  # each LMM family's pairs/s (--shape)
    describe: list[DescribeResult] = field(default_factory=list)  # each LMM family's captions/s (--shape)
    filter: list[FilterResult] = field(default_factory=list)  # filtered search: recall@10 and latency
    ocr: list[OcrResult] = field(default_factory=list)  # the ocr indexer's frames/s
    dupes: list[DupesBenchResult] = field(default_factory=list)  # near-duplicate grouping of 100k units
    speech: list[SpeechResult] = field(default_factory=list)  # the speech indexer: seconds of sound a second

    def as_dict(self) -> dict:
        return {
            "machine": self.machine, "config": self.config, "notes": self.notes, "runs": self.runs,
            "indexing": [_with_rates(r) for r in self.indexing],
            "recall": [asdict(r) for r in self.recall],
            "rerank": [{**asdict(r), "per_pair_s": r.per_pair_s, "speedup": r.speedup} for r in self.rerank],
            "rerank_lmm": [{**asdict(r), "pairs_per_s": round(r.pairs_per_s, 3)} for r in self.rerank_lmm],
            "describe": [{**asdict(r), "answers_per_s": round(r.answers_per_s, 3),
                          "tokens_per_s": round(r.tokens_per_s, 1)} for r in self.describe],
            "long_video": [_with_rates(r) for r in self.long_video],
            "scaling": [asdict(r) for r in self.scaling],
            "cli": [asdict(r) for r in self.cli],
            "serve": [asdict(r) for r in self.serve],
            "filter": [{**asdict(r), "ratio": round(r.ratio, 3), "cpu_ratio": round(r.cpu_ratio, 3)}
                       for r in self.filter],
            "ocr": [{**asdict(r), "frames_per_s": round(r.frames_per_s, 3),
                     "frames_per_cpu_s": round(r.frames_per_cpu_s, 3)} for r in self.ocr],
            "dupes": [asdict(r) for r in self.dupes],
            "speech": [{**asdict(r), "audio_per_s": round(r.audio_per_s, 2),
                        "vad_audio_per_s": round(r.vad_audio_per_s, 2)} for r in self.speech],
            "checks": [dict(zip(("target", "measured", "met"), c, strict=False)) for c in checks(self)],
        }

    @classmethod
    def read(cls, path) -> "PerfReport":
        """A report saved by ``convis bench perf --json``, read with the size and nesting limits of user files."""
        return cls.from_dict(read_json(path, "perf report"))

    @classmethod
    def from_dict(cls, data: dict) -> "PerfReport":
        """Read back what ``as_dict`` wrote (``convis bench perf --json``)."""
        def rows(kind, key, derived=()):
            return [kind(**{k: v for k, v in row.items() if k not in derived}) for row in data.get(key, [])]

        rates = ("frames_per_s", "clips_per_min")
        return cls(data["machine"], data["config"], rows(IndexingResult, "indexing", rates),
                   rows(RecallResult, "recall"), rows(RerankResult, "rerank", ("per_pair_s", "speedup")),
                   rows(IndexingResult, "long_video", rates), rows(ScalingResult, "scaling"), rows(CliResult, "cli"),
                   rows(ServeLoadResult, "serve"), list(data.get("notes", [])),
                   list(data.get("runs") or [data["machine"]]),
                   rows(LmmRerankResult, "rerank_lmm", ("pairs_per_s",)),
                   rows(DescribeResult, "describe", ("answers_per_s", "tokens_per_s")),
                   rows(FilterResult, "filter", ("ratio", "cpu_ratio")),
                   rows(OcrResult, "ocr", ("frames_per_s", "frames_per_cpu_s")), rows(DupesBenchResult, "dupes"),
                   rows(SpeechResult, "speech", ("audio_per_s", "vad_audio_per_s")))


def _with_rates(r: IndexingResult) -> dict:
    return {**asdict(r), "frames_per_s": round(r.frames_per_s, 3), "clips_per_min": round(r.clips_per_min, 3)}


def checks(report: PerfReport) -> list[Check]:
    """(target, what was measured, met?) for every target the report has numbers for."""
    found = []
    for decoder in dict.fromkeys(r.decoder for r in report.indexing):
        found += decode_checks(report.indexing, decoder)
    for decoder, threads in measured_settings(report.indexing):
        found += pipeline_checks(report.indexing, decoder, threads)
    found += [("100k units grouped as near-duplicates in under a minute", f"{r.total_s:.1f} s for {r.units:,}",
               r.total_s < DUPES_SECONDS) for r in report.dupes if r.units >= 100_000]
    return found + recall_checks(report.recall) + filter_checks(report.filter) + rerank_checks(report.rerank) \
        + long_video_checks(report.long_video) \
        + scaling_checks(report.scaling) + cli_checks(report.cli) + serve_checks(report.serve)


def combine(reports: Sequence[PerfReport]) -> PerfReport:
    """One report from runs that measured different parts (or again): each part from the last run
    that has it; every run's command and machine facts are kept."""
    out = PerfReport(reports[-1].machine, reports[-1].config)
    source = {}  # part -> the report it comes from
    for part in PARTS:
        for i, report in enumerate(reports):
            if getattr(report, part):
                setattr(out, part, getattr(report, part))
                source[part] = i
    out.notes = list(dict.fromkeys(n for r in reports for n in r.notes))
    for i, report in enumerate(reports):  # a run whose every part was measured again later drops out
        used = [part.replace("_", " ") for part in PARTS if source.get(part) == i]
        out.runs += [{**run, "parts": used} for run in report.runs] if used else []
    return out
