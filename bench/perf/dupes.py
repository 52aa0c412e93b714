"""``convis dupes`` at scale: 100,000 synthetic units (a smoke run: the first --sizes) grouped into near-duplicate
files, the pair search in the index the policy builds for that many vectors, timed end to end; and 30,000 (smoke:
the first --sizes) at the lowest threshold there is, where every unit is alike half the others, its peak memory
measured in a process of its own (each unit is paired with its nearest few only, so it stays bounded)."""

from __future__ import annotations

import time

import numpy as np

from bench.perf.config import Footage, PerfConfig, Progress
from bench.perf.measuring import measure
from bench.perf.sections.dupes import DupesBenchResult
from retrieval.analysis import dupe_groups
from retrieval.store.vectors.faiss_index import choose_factory

DUPES_UNITS = 100_000
UNITS_A_FILE = 5
DIM = 128  # the fingerprint indexer's
COPIED = 0.1  # the share of files that have a copy
NOISE = 0.02  # a copy's vectors: the original's plus this much noise a dimension (similarity about 0.97)
THRESHOLD = 0.9
LOWEST_UNITS = 30_000
LOWEST = float(np.nextafter(0.5, 1))  # the lowest threshold taken: above 0.5


def synthetic(units: int, seed: int = 0) -> tuple[dupe_groups.Units, set[tuple[int, int]]]:
    """``units`` unit vectors in files of UNITS_A_FILE, the last files copies of the first ones; the copy pairs."""
    rng = np.random.default_rng(seed)
    files = units // UNITS_A_FILE
    copies = int(files * COPIED)
    originals = rng.normal(size=((files - copies) * UNITS_A_FILE, DIM)).astype(np.float32)
    copied = originals[:copies * UNITS_A_FILE] + rng.normal(scale=NOISE, size=(copies * UNITS_A_FILE, DIM))
    vectors = np.concatenate([originals, copied.astype(np.float32)])
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    file = np.repeat(np.arange(files), UNITS_A_FILE)
    start = np.tile(np.arange(UNITS_A_FILE, dtype=np.float64), files)
    planted = {(f, files - copies + f) for f in range(copies)}
    return dupe_groups.Units(np.arange(len(vectors)), vectors, file, start, start + 1), planted


def run_dupes(config: PerfConfig, footage: Footage, progress: Progress) -> list[DupesBenchResult]:
    count = config.sizes[0] if config.smoke else DUPES_UNITS
    lowest = config.sizes[0] if config.smoke else LOWEST_UNITS
    progress(f"dupes: {count} x {DIM} units, then {lowest} at threshold {LOWEST}")
    return [measure(grouped, count, THRESHOLD, isolate=config.isolate),
            measure(grouped, lowest, LOWEST, isolate=config.isolate)]


def grouped(count: int, threshold: float) -> DupesBenchResult:
    """``count`` synthetic units grouped into copied files at ``threshold``, timed."""
    units, planted = synthetic(count)
    started = time.perf_counter()
    pairs = dupe_groups.unit_pairs(units.vectors, threshold)
    searched = time.perf_counter()
    found = dupe_groups.file_pairs(units, pairs)
    groups = dupe_groups.components(int(units.file.max()) + 1, found.a, found.b)
    done = time.perf_counter()
    hits = set(zip(found.a.tolist(), found.b.tolist(), strict=True))
    return DupesBenchResult(count, DIM, choose_factory(count, DIM), threshold, len(pairs.a), len(groups),
                            round(len(hits & planted) / max(len(planted), 1), 4),
                            round(len(hits & planted) / max(len(hits), 1), 4),
                            round(searched - started, 2), round(done - started, 2), saturated=pairs.saturated)
