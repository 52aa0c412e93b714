"""Indexing end to end: a real ``IndexRun`` next to the paper's extraction, and the indexing part of a run
(decode, embed and end-to-end rows for every decoder and torch thread setting)."""

from __future__ import annotations

import os
import tempfile
from contextlib import nullcontext
from dataclasses import replace
from pathlib import Path
from typing import Sequence

from bench.perf.config import Footage, PerfConfig, Progress
from bench.perf.decode import every_frame, measure_decode, measure_reference_decode, measure_streamed_decode
from bench.perf.decoders import OneDecoder
from bench.perf.embed import load_indexer, measure_embed
from bench.perf.footage import hard_link_copies, list_clips
from bench.perf.measuring import clock, repeated, torch_thread_count
from bench.perf.sections.indexing import IndexingResult
from indexers.factory import create_indexer
from retrieval.pipeline.distribute import ProcessDistributor
from retrieval.pipeline.local import LocalExecutor, cores_left, cpu_threads
from retrieval.pipeline.run import IndexRun
from retrieval.pipeline.settings import IndexSettings
from retrieval.pipeline.stages import DECODER_MODULES
from retrieval.store.catalog import Catalog


def measure_pipeline(root: Path, decoder: str, indexer_spec: str, workers: int = 0,
                     segment_seconds: float | None = None, as_engine: bool = True) -> IndexingResult:
    """A real ``IndexRun`` into a fresh catalog: decode in worker processes, embed here, write DuckDB.

    ``as_engine``: torch threads as ``convis index`` sets them (the cores the decode workers leave);
    otherwise as the caller set them.
    """

    workers = workers or max(1, (os.cpu_count() or 2) // 2)  # the engine's default
    pool = ProcessDistributor(workers)
    pool.start(DECODER_MODULES)  # as the engine does: workers start while the model loads
    try:
        indexer = load_indexer(indexer_spec)
    except BaseException:
        pool.close()
        raise
    with tempfile.TemporaryDirectory(prefix="convis-perf-") as tmp:
        with Catalog(Path(tmp) / "catalog.duckdb") as catalog:
            distributor = OneDecoder(pool, decoder)
            run = IndexRun(catalog, Path(tmp), [indexer], LocalExecutor(distributor),
                           IndexSettings(segment_seconds=segment_seconds))
            with cpu_threads([indexer], cores_left(pool)) if as_engine else nullcontext():
                threads = torch_thread_count()
                with clock() as timed:
                    report = run.run(Path(root))
    if report.failed:
        raise RuntimeError(f"indexing failed: {report.failed[0][0]}: {report.failed[0][1]}")
    detail = f"{workers} decode worker(s)" + (", torch threads as `convis index` sets them" if as_engine else "")
    return IndexingResult("end-to-end", "sampled", decoder, indexer_spec, report.indexed, report.frames,
                          timed["seconds"], detail, cpu_s=timed["cpu_s"], torch_threads=threads)


def measure_reference_pipeline(clips: Sequence[Path], decoder: str, indexer_spec: str) -> IndexingResult:
    """The paper's extraction end to end: per clip, decode every frame, embed every frame, average."""
    indexer = load_indexer(indexer_spec)
    frames = 0
    with clock() as timed:
        for clip in clips:
            pixels = every_frame(clip, decoder)
            indexer.embed_units([pixels])
            frames += len(pixels)
            del pixels
    return IndexingResult("end-to-end", "every frame", decoder, indexer_spec, len(clips), frames,
                          timed["seconds"], "every frame embedded, then averaged", cpu_s=timed["cpu_s"],
                          torch_threads=torch_thread_count())


def run_indexing(config: PerfConfig, footage: Footage, progress: Progress) -> list[IndexingResult]:
    """Every stage on the clips (with ``--copies``, each clip several times); the paper's way, tens of
    times slower, once on the original clips (ratios compare clips per minute)."""
    root = footage.source
    if config.copies > 1:
        root = hard_link_copies(footage.source, footage.scratch / "clips", config.copies)
    clips, count = list_clips(root), create_indexer(config.indexer).frames_per_unit
    rows = []
    for decoder in config.decoders:
        for threads, repeat, name, fn, *args in _steps(config, decoder, root, clips, footage.clips, count):
            progress(f"indexing: {decoder} {name}" + (f", torch threads {threads}" if threads else ""))
            row = repeated(replace(config, repeat=repeat), fn, *args, threads=threads)
            rows.append(replace(row, setting="default" if threads is None else str(threads)))
    return rows


def _steps(config: PerfConfig, decoder: str, root: Path, clips: list[Path], originals: list[Path],
           count: int) -> list[tuple]:
    """(torch threads, runs, name, measurement, its arguments...) for one decoder, in measuring order."""
    decoding = [("decode, sampled", measure_decode, clips, decoder, count),
                ("decode, every frame", measure_reference_decode, clips, decoder),
                ("decode, every frame streamed", measure_streamed_decode, clips, decoder, count)]
    steps = [(None, config.repeat, *step) for step in decoding]  # decoding never touches torch
    for threads in config.torch_threads:
        steps += [(threads, config.repeat, "embed", measure_embed, clips, decoder, config.indexer),
                  (threads, config.repeat, "end-to-end, sampled", measure_pipeline, root, decoder, config.indexer,
                   0, None, threads is None)]
    if decoder == config.decoders[0]:
        # the paper's way embeds every frame: tens of times slower, so measured once, with one decoder
        steps.append((config.torch_threads[0], 1, "end-to-end, every frame", measure_reference_pipeline,
                      originals, decoder, config.indexer))
    return steps
