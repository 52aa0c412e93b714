"""A whole `convis bench perf` run: measuring the sections it asks for (bench/perf/sections/), in page order."""

from __future__ import annotations

import tempfile
from dataclasses import asdict, replace
from pathlib import Path

from bench.perf.config import Footage, PerfConfig, Progress
from bench.perf.footage import list_clips, make_clips
from bench.perf.measuring import load_average, machine_info
from bench.perf.notes import notes
from bench.perf.real_shape import SHAPES, canonical, require_cuda
from bench.perf.report import PerfReport
from bench.perf.sections import SECTIONS

ROOT = Path(__file__).resolve().parents[2]


def run(config: PerfConfig, progress: Progress = lambda message: None,
        command: str = "convis bench perf") -> PerfReport:
    config = replace(config, shape=canonical(config.shape))
    if config.shape not in SHAPES:
        raise ValueError(f"unknown shape {config.shape!r}; use {' or '.join(SHAPES)}")
    if config.shape == "7b":
        require_cuda()  # before any clip is generated or model built
    report = PerfReport(machine_info(), {k: str(v) for k, v in asdict(config).items()})
    chosen = [section for section in SECTIONS.values() if section.chosen(config)]
    with tempfile.TemporaryDirectory(prefix="convis-perf-") as tmp:
        footage = _footage(config, Path(tmp))
        if not footage.clips and any(section.needs_clips for section in chosen):
            raise ValueError(f"no video files in {footage.source}")
        for section in chosen:
            setattr(report, section.name, section.measure(config, footage, progress))
    report.machine["load_after"] = load_average()
    report.notes = notes(config)
    parts = [SECTIONS[name].title for name in report.measured()]
    report.runs = [{**report.machine, "command": command, "parts": parts}]
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
