"""Embedding alone: the indexer on frames decoded beforehand, one call per file as the pipeline makes."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np

from bench.perf.decoders import clip_job, only_decoder
from bench.perf.measuring import clock, torch_thread_count
from bench.perf.sections.indexing import IndexingResult
from indexers.factory import create_indexer
from retrieval.core.sampling import as_spec
from retrieval.pipeline.stages import decode_job


def load_indexer(spec: str):
    indexer = create_indexer(spec)
    blank = np.zeros((1, 64, 64, 3), np.uint8)
    indexer.embed_units([blank])  # first call pays one-time allocations; keep them out of the timing
    return indexer


def measure_embed(clips: Sequence[Path], decoder: str, indexer_spec: str) -> IndexingResult:
    """The model alone on already-decoded frames, one call per file as the pipeline makes."""
    indexer = load_indexer(indexer_spec)
    count = indexer.frames_per_unit
    with only_decoder(decoder):
        units = [[f.pixels for f in decode_job(clip_job(c, count)).frames[as_spec(count)]] for c in clips]
    with clock() as timed:
        for unit in units:
            indexer.embed_units(unit)
    frames = sum(len(u) for file in units for u in file)
    return IndexingResult("embed", "sampled", decoder, indexer_spec, len(clips), frames, timed["seconds"],
                          cpu_s=timed["cpu_s"], torch_threads=torch_thread_count())
