"""Filtered vector search: recall@10 of a ``--where`` filter's search against an exact search of the rows it keeps,
and its latency against the same index unfiltered, for each index kind and a filter keeping 1%, 10% and 50%."""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from bench.perf.config import Footage, PerfConfig, Progress
from bench.perf.search import _ids, mixture
from bench.perf.sections.filter import FilterResult
from retrieval.store.vectors import filtered_search
from retrieval.store.vectors.faiss_index import VectorIndex, ivf_lists

FILTER_VECTORS = 100_000  # the collection a full run filters (a smoke run: its first --sizes)
FILTER_K = 10
KEEPS = (0.01, 0.1, 0.5)


def index_kinds(count: int) -> list[tuple[str, str]]:
    """(label, factory): exact, the inverted-file index convis builds at this size, and a graph index."""
    return [("exact", "Flat"), ("IVF", f"IVF{ivf_lists(count)},Flat"), ("HNSW", "HNSW32")]


def run_filter(config: PerfConfig, footage: Footage, progress: Progress) -> list[FilterResult]:
    count = config.sizes[0] if config.smoke else FILTER_VECTORS
    data, queries = mixture(count, config.dim, seed=1), mixture(config.single, config.dim, seed=2)
    ids, rng = _ids(count), np.random.default_rng(0)
    kept = {keep: np.sort(rng.choice(count, max(1, int(count * keep)), replace=False)) for keep in KEEPS}
    truth = {keep: exact_top(data, ids, rows, queries) for keep, rows in kept.items()}
    rows = []
    for label, factory in index_kinds(count):
        progress(f"filter: {count} x {config.dim} {label} {factory}")
        started = time.perf_counter()
        index = VectorIndex.build(ids, data, 0, factory)
        build_s = round(time.perf_counter() - started, 2)
        runs = [_run(index, queries, {keep: ids[allowed] for keep, allowed in kept.items()})
                for _ in range(max(1, config.repeat))]
        plain = [run[None] for run in runs]
        for keep in KEEPS:
            timed = [run[keep] for run in runs]
            rows.append(FilterResult(
                count, config.dim, label, index.factory, index.search_params, keep, len(queries),
                min(_recall(t.found, truth[keep]) for t in timed), _p50(t.wall for t in timed),
                _p50(t.wall for t in plain), build_s, float(np.median([t.wall[0] for t in timed])),
                float(np.median([t.wall[1] for t in timed])), len(runs), _p50(t.cpu for t in timed),
                _p50(t.cpu for t in plain)))
    return rows


@dataclass
class Timed:
    """One pass over the queries: each one's top ids, wall-clock and thread CPU milliseconds."""

    found: list[set[int]]
    wall: list[float]
    cpu: list[float]


def _p50(runs) -> float:
    """The median over runs of each run's median."""
    return float(np.median([np.median(times) for times in runs]))


def _run(index: VectorIndex, queries: np.ndarray, filters: dict[float, np.ndarray]) -> dict[float | None, Timed]:
    """One run: the index unfiltered (key None), then each filter, every filter new to the process (the first
    query of a filter searches its rows; the second gathers them in half precision for the rest).  Both move with
    the machine's other load, so each run times the unfiltered search beside the filtered ones; on a shared
    machine a call longer than the scheduler's slice (a few ms) also waits for a core, which the wall clock counts
    and the thread's CPU time does not."""
    filtered_search.CACHE.clear()
    return {None: _latencies(index, queries, None), **{keep: _latencies(index, queries, allowed)
                                                       for keep, allowed in filters.items()}}


def exact_top(data: np.ndarray, ids: np.ndarray, rows: np.ndarray, queries: np.ndarray) -> list[set[int]]:
    """Each query's top ``FILTER_K`` ids among ``rows``, by inner product over those rows alone."""
    scores = queries @ data[rows].T
    best = np.argsort(-scores, axis=1, kind="stable")[:, :FILTER_K]
    return [set(ids[rows][b].tolist()) for b in best]


def _latencies(index: VectorIndex, queries: np.ndarray, allowed: np.ndarray | None) -> Timed:
    """Each query's top ids and milliseconds, searched one by one (``allowed``: the filter's unit ids, whose first
    queries are timed too: they search without the gathered rows, then gather them)."""
    if allowed is None:
        index.search(queries[0], FILTER_K)  # the first call pays one-time allocations
    timed = Timed([], [], [])
    for query in queries:
        started, cpu = time.perf_counter(), time.thread_time()
        _, top = index.search(query, FILTER_K, allowed)
        timed.cpu.append((time.thread_time() - cpu) * 1e3)
        timed.wall.append((time.perf_counter() - started) * 1e3)
        timed.found.append({int(i) for i in top[0] if i >= 0})
    return timed


def _recall(found: list[set[int]], truth: list[set[int]]) -> float:
    return float(np.mean([len(f & t) / max(len(t), 1) for f, t in zip(found, truth, strict=True)]))
