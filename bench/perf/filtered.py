"""Filtered vector search: recall@10 of a ``--where`` filter's search against an exact search of the rows it keeps,
and its latency against the same index unfiltered, for each index kind and a filter keeping 1%, 10% and 50%."""

from __future__ import annotations

import time

import numpy as np

from bench.perf.config import Footage, PerfConfig, Progress
from bench.perf.results import FilterResult
from bench.perf.search import _ids, mixture
from retrieval.store.vectors import VectorIndex, ivf_lists

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
        plain = float(np.median(_latencies(index, queries, None)[1]))
        for keep, allowed in kept.items():
            found, ms = _latencies(index, queries, ids[allowed])
            rows.append(FilterResult(count, config.dim, label, index.factory, index.search_params, keep, len(queries),
                                     _recall(found, truth[keep]), float(np.median(ms)), plain, build_s))
    return rows


def exact_top(data: np.ndarray, ids: np.ndarray, rows: np.ndarray, queries: np.ndarray) -> list[set[int]]:
    """Each query's top ``FILTER_K`` ids among ``rows``, by inner product over those rows alone."""
    scores = queries @ data[rows].T
    best = np.argsort(-scores, axis=1, kind="stable")[:, :FILTER_K]
    return [set(ids[rows][b].tolist()) for b in best]


def _latencies(index: VectorIndex, queries: np.ndarray,
               allowed: np.ndarray | None) -> tuple[list[set[int]], list[float]]:
    """Each query's top ids and milliseconds, searched one by one (``allowed``: the filter's unit ids)."""
    index.search(queries[0], FILTER_K, allowed)  # the first call pays one-time allocations
    found, ms = [], []
    for query in queries:
        started = time.perf_counter()
        _, top = index.search(query, FILTER_K, allowed)
        ms.append((time.perf_counter() - started) * 1e3)
        found.append({int(i) for i in top[0] if i >= 0})
    return found, ms


def _recall(found: list[set[int]], truth: list[set[int]]) -> float:
    return float(np.mean([len(f & t) / max(len(t), 1) for f, t in zip(found, truth, strict=True)]))
