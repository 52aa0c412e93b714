"""One long video indexed alone, with each decoder (and in segments): the peak memory of a long file."""

from __future__ import annotations

from dataclasses import replace

from bench.perf.config import Footage, PerfConfig, Progress
from bench.perf.footage import link_or_copy
from bench.perf.indexing import measure_pipeline
from bench.perf.measuring import measure
from bench.perf.sections.indexing import IndexingResult


def run_long_video(config: PerfConfig, footage: Footage, progress: Progress) -> list[IndexingResult]:
    """Index ``--long-video`` alone (hard-linked into an empty folder) with each decoder."""
    folder = footage.scratch / "long"
    folder.mkdir()
    link_or_copy(config.long_video, folder / config.long_video.name)
    rows = []
    for segment in dict.fromkeys([None, config.segment]):
        for decoder in config.decoders:
            progress(f"long video: {decoder}" + (f", {segment:g} s segments" if segment else ""))
            row = measure(measure_pipeline, folder, decoder, config.indexer, 0, segment,
                          isolate=config.isolate, torch_threads=config.torch_threads[-1])
            rows.append(replace(row, detail=f"{row.detail}; " + (f"{segment:g} s segments" if segment
                                                                  else "one unit per file")))
    return rows
