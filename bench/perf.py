"""Performance measurements: indexing throughput, recall latency and quality, reranking cost, peak memory.

Each measurement is a function returning a dataclass.  Outside smoke runs every measurement
runs in a fresh process, so one measurement's memory peak never inflates the next one's;
peak RSS is sampled over that process and its children (decoder workers included).
"""

from __future__ import annotations

import gc
import math
import os
import resource
import shutil
import sys
import tempfile
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from fractions import Fraction
from functools import partial
from pathlib import Path
from typing import Any, Callable, Sequence

import multiprocessing as mp
import numpy as np

RECALL_K = 100
MIXTURE_COMPONENTS = 1000
DEFAULT_SIZES = (10_000, 100_000, 1_000_000)
ROOT = Path(__file__).resolve().parents[1]


# ---------------------------------------------------------------- memory


def _rss_kb(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass  # the process ended between listing and reading
    return 0


def _children(pid: int) -> list[int]:
    found = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as fh:
                found.extend(int(c) for c in fh.read().split())
    except OSError:
        pass
    return found


def tree_rss_mb(pid: int | None = None) -> float:
    """Resident memory of a process and all its descendants, in MB (decoder workers count too)."""
    todo, total = [pid or os.getpid()], 0
    while todo:
        current = todo.pop()
        total += _rss_kb(current)
        todo.extend(_children(current))
    return total / 1024


class PeakRss:
    """Samples the process tree's RSS in a thread; ``mb`` is the highest total seen.

    Sampling (every 10 ms) can miss a spike shorter than that; ``ru_maxrss`` of this process
    is taken as a floor, which is exact when the measurement has a process of its own.
    """

    def __init__(self, interval: float = 0.01, own_process: bool = False):
        self.interval, self.own_process, self.mb = interval, own_process, 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def __enter__(self) -> "PeakRss":
        self.mb = tree_rss_mb()
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self.mb = max(self.mb, tree_rss_mb())
        if self.own_process:  # Linux reports kilobytes
            self.mb = max(self.mb, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)

    def _sample(self) -> None:
        while not self._stop.wait(self.interval):
            self.mb = max(self.mb, tree_rss_mb())


def _measured(fn: Callable, args: tuple, own_process: bool):
    with PeakRss(own_process=own_process) as peak:
        result = fn(*args)
    if isinstance(result, list):
        return [replace(r, peak_rss_mb=round(peak.mb, 1)) for r in result]
    return replace(result, peak_rss_mb=round(peak.mb, 1))


def measure(fn: Callable, *args, isolate: bool = True):
    """Run ``fn(*args)`` (returning a dataclass with ``peak_rss_mb``) and record its peak memory.

    ``isolate`` gives it a fresh process: a clean baseline, and freed memory of earlier
    measurements (which the allocator may keep) cannot count against it.
    """
    if not isolate:
        return _measured(fn, args, own_process=False)
    with ProcessPoolExecutor(max_workers=1, mp_context=mp.get_context("spawn")) as pool:
        return pool.submit(_measured, fn, args, True).result()


# ---------------------------------------------------------------- recall


def mixture(count: int, dim: int, seed: int, components: int = MIXTURE_COMPONENTS,
            rank: int = 16, chunk: int = 8192) -> np.ndarray:
    """Unit vectors from a Gaussian mixture shaped like image embeddings.

    Each component is a random unit centre plus a random ``rank``-dimensional subspace (most of
    the spread: embeddings have a low intrinsic dimension) plus weaker isotropic noise.  The
    mixture itself is fixed by ``dim`` and ``components``; ``seed`` only picks the draws, so
    queries drawn with another seed come from the same distribution as the collection.
    """
    shape_rng = np.random.default_rng(12345 + dim)
    centres = _unit(shape_rng.standard_normal((components, dim), dtype=np.float32))
    bases = shape_rng.standard_normal((components, rank, dim), dtype=np.float32) * (0.7 / math.sqrt(rank * dim))
    spread = shape_rng.uniform(0.5, 1.5, components).astype(np.float32)  # some clusters are tighter
    rng = np.random.default_rng(seed)
    out = np.empty((count, dim), np.float32)
    for start in range(0, count, chunk):
        n = min(chunk, count - start)
        label = rng.integers(0, components, n)
        latent = rng.standard_normal((n, rank), dtype=np.float32) * spread[label, None]
        noise = rng.standard_normal((n, dim), dtype=np.float32) * (0.3 / math.sqrt(dim))
        out[start : start + n] = _unit(centres[label] + np.einsum("nr,nrd->nd", latent, bases[label]) + noise)
    return out


def _unit(x: np.ndarray) -> np.ndarray:
    return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)


@dataclass(frozen=True)
class RecallData:
    """A synthetic collection, its queries and their exact top-k, saved as .npy files in ``folder``."""

    folder: str
    vectors: int
    dim: int
    queries: int
    seconds: float
    peak_rss_mb: float = 0.0


@dataclass(frozen=True)
class RecallResult:
    vectors: int
    dim: int
    index: str  # what kind, e.g. "exact", "IVF (auto)"
    factory: str
    params: str  # search-time parameters
    batch: int
    queries: int
    threads: int
    p50_ms: float
    p95_ms: float
    recall_at_100: float
    build_s: float
    peak_rss_mb: float = 0.0


def _ids(count: int) -> np.ndarray:
    return np.arange(count, dtype=np.int64) * 3 + 10  # sparse, like catalog unit ids after deletions


def prepare_recall_data(folder: str, count: int, dim: int, queries: int) -> RecallData:
    """Collection, held-out queries from the same mixture, and exact top-100 ids (ground truth)."""
    import faiss

    started = time.perf_counter()
    data = mixture(count, dim, seed=1)
    query = mixture(queries, dim, seed=2)
    faiss.omp_set_num_threads(os.cpu_count() or 1)
    _, rows = faiss.knn(query, data, min(RECALL_K, count), faiss.METRIC_INNER_PRODUCT)
    np.save(Path(folder) / "data.npy", data)
    np.save(Path(folder) / "queries.npy", query)
    np.save(Path(folder) / "truth.npy", _ids(count)[rows])
    return RecallData(folder, count, dim, queries, time.perf_counter() - started)


def index_kinds(count: int, dim: int) -> list[tuple[str, str, str]]:
    """(label, factory, search parameters) to compare at one size; the automatic choice is marked."""
    from retrieval.vectors import choose_factory, default_search_params, ivf_lists

    lists = ivf_lists(count)
    ivf = f"IVF{lists},Flat"
    pq = f"IVF{lists},PQ{dim // 8 if dim % 8 == 0 else dim}"
    kinds = [
        ("exact", "Flat", ""),
        ("HNSW", "HNSW32,Flat", default_search_params("HNSW32,Flat", count)),
        ("IVF", ivf, default_search_params(ivf, count)),
        ("IVF-PQ", pq, default_search_params(pq, count)),
    ]
    auto = choose_factory(count, dim)
    return [(f"{label} (auto)" if factory == auto else label, factory, params) for label, factory, params in kinds]


def measure_index(data: RecallData, label: str, factory: str, params: str, single: int = 200,
                  batches: int = 5, budget_s: float = 30.0) -> list[RecallResult]:
    """Build one index through ``VectorIndex`` and time single queries and batches of 100."""
    import faiss

    from retrieval.vectors import VectorIndex

    folder = Path(data.folder)
    matrix = np.load(folder / "data.npy", mmap_mode="r")
    queries, truth = np.load(folder / "queries.npy"), np.load(folder / "truth.npy")
    cores = os.cpu_count() or 1
    faiss.omp_set_num_threads(cores)  # building parallelises well
    started = time.perf_counter()
    index = VectorIndex.build(_ids(data.vectors), matrix, generation=1, factory=factory, search_params=params)
    build_s = time.perf_counter() - started
    del matrix
    gc.collect()
    row = partial(RecallResult, data.vectors, data.dim, label, factory, index.search_params)
    # one query cannot use a second thread (FAISS splits work by query); idle OpenMP threads only spin
    faiss.omp_set_num_threads(1)
    one = _latencies(index, queries, 1, single, budget_s)
    faiss.omp_set_num_threads(cores)
    many = _latencies(index, queries, min(100, len(queries)), batches, budget_s)
    return [
        row(1, len(one[0]), 1, *_stats(one, truth), build_s),
        row(min(100, len(queries)), len(many[0]), cores, *_stats(many, truth), build_s),
    ]


def _latencies(index, queries: np.ndarray, batch: int, calls: int, budget_s: float):
    """Time up to ``calls`` searches of ``batch`` queries (at least 3, stopping after ``budget_s``)."""
    index.search(queries[:batch], RECALL_K)  # first call pays one-time allocations
    times, found, spent = [], [], 0.0
    for start in range(0, min(len(queries), calls * batch), batch):
        t0 = time.perf_counter()
        _, ids = index.search(queries[start : start + batch], RECALL_K)
        times.append(time.perf_counter() - t0)
        found.append(ids)
        spent += times[-1]
        if spent > budget_s and len(times) >= 3:
            break
    return np.concatenate(found), np.array(times)


def _stats(measured, truth: np.ndarray) -> tuple[float, float, float]:
    found, times = measured
    hits = [len(np.intersect1d(f[f >= 0], t)) / len(t) for f, t in zip(found, truth)]
    return (round(float(np.median(times)) * 1e3, 3), round(float(np.percentile(times, 95)) * 1e3, 3),
            round(float(np.mean(hits)), 4))
