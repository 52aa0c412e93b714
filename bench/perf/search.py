"""Vector search: latency and recall@100 of each index kind on a synthetic collection shaped like
image embeddings, at every size of the run."""

from __future__ import annotations

import gc
import math
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path

import faiss
import numpy as np

from bench.perf.config import Footage, PerfConfig, Progress
from bench.perf.measuring import measure
from bench.perf.sections.recall import RecallResult
from retrieval.store.vectors import faiss_index as vectors
from retrieval.store.vectors.faiss_index import VectorIndex, choose_factory, default_search_params, ivf_lists

RECALL_K = 100
MIXTURE_COMPONENTS = 1000


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


def _ids(count: int) -> np.ndarray:
    return np.arange(count, dtype=np.int64) * 3 + 10  # sparse, like catalog unit ids after deletions


def prepare_recall_data(folder: str, count: int, dim: int, queries: int) -> RecallData:
    """Collection, held-out queries from the same mixture, and exact top-100 ids (ground truth)."""
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
    batch = min(100, len(queries))

    def timed(size: int, calls: int, threads: int) -> RecallResult:
        measured = _latencies(index, queries, size, calls, budget_s)
        return row(size, len(measured[0]), threads, *_stats(measured, truth), build_s)

    # VectorIndex.search itself drops to one OpenMP thread for a handful of queries
    rows = [timed(1, single, 1), timed(batch, batches, cores)]
    if factory == "Flat":  # exact search on a batch is where FAISS's BLAS switch-over matters
        rows.append(_with_faiss_blas_threshold(lambda: timed(batch, batches, cores)))
    return rows


def _with_faiss_blas_threshold(timed_batch: Callable[[], RecallResult]) -> RecallResult:
    """The exact batch again with FAISS's shipped BLAS threshold (convis lowers it for batches)."""
    ours, vectors.BLAS_FROM_QUERIES = vectors.BLAS_FROM_QUERIES, vectors.FAISS_BLAS_THRESHOLD
    try:
        result = timed_batch()
    finally:
        vectors.BLAS_FROM_QUERIES = ours
    return replace(result, index=f"exact, FAISS's BLAS threshold {vectors.FAISS_BLAS_THRESHOLD}")


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
    # a search stopped by its time budget answered only the first queries
    hits = [len(np.intersect1d(f[f >= 0], t)) / len(t) for f, t in zip(found, truth, strict=False)]
    return (round(float(np.median(times)) * 1e3, 3), round(float(np.percentile(times, 95)) * 1e3, 3),
            round(float(np.mean(hits)), 4))


def run_recall(config: PerfConfig, footage: Footage, progress: Progress) -> list[RecallResult]:
    """Every index kind at every size of the run, each size's collection made once and then removed."""
    rows = []
    for size in config.sizes:
        folder = footage.scratch / f"vectors-{size}"
        folder.mkdir()
        progress(f"recall: {size} x {config.dim} vectors, exact top-{RECALL_K}")
        data = measure(prepare_recall_data, str(folder), size, config.dim, config.queries, isolate=config.isolate)
        for label, factory, params in index_kinds(size, config.dim):
            progress(f"recall: {size} {label} {factory} {params}")
            rows.extend(measure(measure_index, data, label, factory, params, config.single, config.batches,
                                isolate=config.isolate))
        shutil.rmtree(folder)
    return rows
