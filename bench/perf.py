"""Performance measurements: indexing throughput, recall latency and quality, reranking cost, peak memory.

Each measurement is a function returning a dataclass.  Outside smoke runs every measurement
runs in a fresh process, so one measurement's memory peak never inflates the next one's;
peak RSS is sampled over that process and its children (decoder workers included).
"""

from __future__ import annotations

import gc
import math
import multiprocessing as mp
import os
import resource
import shutil
import sys
import tempfile
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, replace
from fractions import Fraction
from functools import partial
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from retrieval.core.sampling import as_spec

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


def _tree(pid: int) -> list[int]:
    todo, found = [pid], []
    while todo:
        current = todo.pop()
        found.append(current)
        todo.extend(_children(current))
    return found


def _cpu_s(pid: int) -> float:
    """User + system CPU seconds a process has used so far (0 once it is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return 0.0


class PeakRss:
    """Samples the process tree in a thread: ``mb`` is the highest total RSS seen, ``cpu_s`` the CPU
    time the tree used meanwhile (workers included, counted up to their last sample).

    Sampling (every 10 ms) can miss a spike shorter than that; ``ru_maxrss`` of this process
    is taken as a floor, which is exact when the measurement has a process of its own.
    """

    def __init__(self, interval: float = 0.01, own_process: bool = False):
        self.interval, self.own_process, self.mb, self.cpu_s = interval, own_process, 0.0, 0.0
        self._cpu: dict[int, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def __enter__(self) -> "PeakRss":
        self._start_cpu = {p: _cpu_s(p) for p in _tree(os.getpid())}
        self._once()
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self._once()
        self.cpu_s = sum(used - self._start_cpu.get(pid, 0.0) for pid, used in self._cpu.items())
        if self.own_process:  # Linux reports kilobytes
            self.mb = max(self.mb, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)

    def _once(self) -> None:
        pids = _tree(os.getpid())
        self.mb = max(self.mb, sum(_rss_kb(p) for p in pids) / 1024)
        for pid in pids:
            self._cpu[pid] = max(self._cpu.get(pid, 0.0), _cpu_s(pid))

    def _sample(self) -> None:
        while not self._stop.wait(self.interval):
            self._once()


@contextmanager
def clock():
    """Wall and CPU seconds of a block; CPU covers this process and the workers it starts.

    CPU over wall is how many cores the block really got: on a shared machine a pipeline can
    only overlap decoding and embedding if a second core is free.
    """
    timing = {}
    with PeakRss() as usage:
        started = time.perf_counter()
        yield timing
        timing["seconds"] = time.perf_counter() - started
    timing["cpu_s"] = round(usage.cpu_s, 2)


def _measured(fn: Callable, args: tuple, own_process: bool, torch_threads: int | None = None):
    if torch_threads:
        import torch

        torch.set_num_threads(torch_threads)
    with PeakRss(own_process=own_process) as peak:
        result = fn(*args)
    if isinstance(result, list):
        return [replace(r, peak_rss_mb=round(peak.mb, 1)) for r in result]
    return replace(result, peak_rss_mb=round(peak.mb, 1))


def measure(fn: Callable, *args, isolate: bool = True, torch_threads: int | None = None):
    """Run ``fn(*args)`` (returning a dataclass with ``peak_rss_mb``) and record its peak memory.

    ``isolate`` gives it a fresh process: a clean baseline, and freed memory of earlier
    measurements (which the allocator may keep) cannot count against it.  ``torch_threads``
    sets torch's intra-op threads there first (None: torch's default, one per core).
    """
    if not isolate:
        import torch

        before = torch.get_num_threads()
        try:
            return _measured(fn, args, False, torch_threads)
        finally:
            torch.set_num_threads(before)
    with ProcessPoolExecutor(max_workers=1, mp_context=mp.get_context("spawn")) as pool:
        return pool.submit(_measured, fn, args, True, torch_threads).result()


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
    from retrieval.store.vectors import choose_factory, default_search_params, ivf_lists

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

    from retrieval.store.vectors import VectorIndex

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
    # VectorIndex.search itself drops to one OpenMP thread for a handful of queries
    one = _latencies(index, queries, 1, single, budget_s)
    many = _latencies(index, queries, batch, batches, budget_s)
    rows = [row(1, len(one[0]), 1, *_stats(one, truth), build_s),
            row(batch, len(many[0]), cores, *_stats(many, truth), build_s)]
    if factory == "Flat":  # exact search on a batch is where FAISS's BLAS switch-over matters
        rows.append(_blas_row(index, queries, batch, batches, budget_s, truth, row, build_s, cores))
    return rows


def _blas_row(index, queries, batch, batches, budget_s, truth, row, build_s, cores) -> RecallResult:
    """The exact batch again with FAISS's shipped BLAS threshold (convis lowers it for batches)."""
    from retrieval.store import vectors

    ours, vectors.BLAS_FROM_QUERIES = vectors.BLAS_FROM_QUERIES, vectors.FAISS_BLAS_THRESHOLD
    try:
        many = _latencies(index, queries, batch, batches, budget_s)
    finally:
        vectors.BLAS_FROM_QUERIES = ours
    return replace(row(batch, len(many[0]), cores, *_stats(many, truth), build_s),
                   index=f"exact, FAISS's BLAS threshold {vectors.FAISS_BLAS_THRESHOLD}")


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


# ---------------------------------------------------------------- indexing


@dataclass(frozen=True)
class IndexingResult:
    stage: str  # "decode", "embed", "end-to-end"
    way: str  # "sampled" (ours) or "every frame" (the reference feature extraction)
    decoder: str
    indexer: str
    clips: int
    frames: int  # frames handed to the model
    seconds: float
    detail: str = ""
    peak_rss_mb: float = 0.0
    cpu_s: float = 0.0  # CPU time of the timed block, workers included
    torch_threads: int = 0  # torch's intra-op threads in the measuring process
    setting: str = ""  # the --torch-threads entry it was measured under ("default": as convis runs)

    @property
    def frames_per_s(self) -> float:
        return self.frames / self.seconds if self.seconds > 0 else math.inf

    @property
    def clips_per_min(self) -> float:
        return 60 * self.clips / self.seconds if self.seconds > 0 else math.inf


def list_clips(folder: Path) -> list[Path]:
    from retrieval.media.scan import find_videos

    found, _ = find_videos(Path(folder))
    return [Path(f.path) for f in found]


def _job(path: Path, frames_per_unit: int, segment_seconds: float | None = None):
    from retrieval.media.scan import FoundFile
    from retrieval.pipeline.indexing import DecodeJob

    stat = path.stat()
    return DecodeJob(FoundFile(str(path), path.name, stat.st_size, stat.st_mtime), (as_spec(frames_per_unit),),
                     segment_seconds)


@contextmanager
def only_decoder(name: str):
    """Within the block, every VideoDecoder built in this process uses one backend.

    The pipeline's ``decode_job`` builds its own decoder with every installed backend, so
    comparing decord with PyAV needs the choice made module-wide (and undone afterwards).
    """
    from retrieval.media import frames

    original = frames._available_backends
    chosen = [factory for factory in original() if factory.name == name]
    if not chosen:
        raise ValueError(f"unknown or unavailable decoder {name!r}")
    frames._available_backends = lambda: chosen
    try:
        yield
    finally:
        frames._available_backends = original


def _decode_with(decoder: str, fn: Callable, job):
    with only_decoder(decoder):
        return fn(job)


class OneDecoder:
    """A distributor wrapper whose workers decode with one backend only."""

    def __init__(self, inner, decoder: str):
        self.inner, self.decoder = inner, decoder

    def map(self, fn, items):
        return self.inner.map(partial(_decode_with, self.decoder, fn), items)


def _load_indexer(spec: str):
    from indexers.factory import create_indexer

    indexer = create_indexer(spec)
    blank = np.zeros((1, 64, 64, 3), np.uint8)
    indexer.embed_units([blank])  # first call pays one-time allocations; keep them out of the timing
    return indexer


def _frames_of(decoded, count: int) -> int:
    return sum(len(f.indices) for f in decoded.frames[as_spec(count)])


def measure_decode(clips: Sequence[Path], decoder: str, frames_per_unit: int) -> IndexingResult:
    """Our decoding alone, one process, exactly as a pipeline worker runs it (probe, sample, hash)."""
    from retrieval.pipeline.indexing import decode_job

    jobs = [_job(c, frames_per_unit) for c in clips]
    with only_decoder(decoder), clock() as timed:
        decoded = [decode_job(j) for j in jobs]
    frames = sum(_frames_of(d, frames_per_unit) for d in decoded)
    return IndexingResult("decode", "sampled", decoder, "-", len(clips), frames, timed["seconds"],
                          cpu_s=timed["cpu_s"], torch_threads=_threads())


def every_frame(path: Path, decoder: str) -> np.ndarray:
    """Every frame of the stream as full-size RGB, all held at once: how the paper's feature
    extraction reads a video (decord ``VideoReader(path, ctx=cpu(0)).get_batch(range(len))``, its
    default threads).  PyAV, which the paper does not use, decodes every frame the same way."""
    if decoder == "decord":
        import decord

        decord.logging.set_level(decord.logging.QUIET)  # as our decoder does: damaged slices are not news
        reader = decord.VideoReader(str(path), ctx=decord.cpu(0))
        return reader.get_batch(range(len(reader))).asnumpy()
    return np.stack(list(_every_frame_pyav(path)))


def streamed_frames(path: Path, decoder: str, frames_per_unit: int) -> tuple[np.ndarray, int]:
    """The cheapest way to decode every frame: one thread, frame by frame, keeping only the sampled ones.

    They are resized to our output size, so this and our sampled decoding hand the model
    identical inputs.  Returns (frames, number of frames decoded).
    """
    from retrieval.core.sampling import sample_frame_indices
    from retrieval.media.frames import VideoDecoder, output_size

    info = VideoDecoder(backends=[decoder]).backends[0].probe(Path(path))
    wanted = sample_frame_indices(info.frame_count, info.fps, frames_per_unit)
    every = _every_frame_decord if decoder == "decord" else _every_frame_pyav
    kept, decoded, keep = {}, 0, set(wanted)
    for number, rgb in enumerate(every(path)):
        decoded += 1
        if number in keep:
            kept[number] = rgb
    last = kept[max(kept)]
    size = output_size(info.width, info.height)
    return np.stack([_resize(kept.get(i, last), size) for i in wanted]), decoded


def _every_frame_decord(path: Path):
    import decord

    reader = decord.VideoReader(str(path), ctx=decord.cpu(0), num_threads=1)
    for _ in range(len(reader)):
        yield reader.next().asnumpy()


def _every_frame_pyav(path: Path):
    import av

    with av.open(str(path)) as container:
        for frame in container.decode(container.streams.video[0]):
            yield frame.to_ndarray(format="rgb24")


def _resize(rgb: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    from PIL import Image

    if (rgb.shape[1], rgb.shape[0]) == size:
        return rgb
    return np.asarray(Image.fromarray(rgb).resize(size, Image.BILINEAR))


def measure_reference_decode(clips: Sequence[Path], decoder: str) -> IndexingResult:
    """Every frame decoded and held, as the paper's extraction reads each video."""
    with clock() as timed:
        decoded = sum(len(every_frame(c, decoder)) for c in clips)
    return IndexingResult("decode", "every frame", decoder, "-", len(clips), decoded, timed["seconds"],
                          "full-size RGB, all frames held", cpu_s=timed["cpu_s"], torch_threads=_threads())


def measure_streamed_decode(clips: Sequence[Path], decoder: str, frames_per_unit: int) -> IndexingResult:
    """Every frame decoded on one thread, only the sampled ones kept: the floor for decoding everything."""
    with clock() as timed:
        results = [streamed_frames(c, decoder, frames_per_unit) for c in clips]
    frames, decoded = sum(len(r[0]) for r in results), sum(r[1] for r in results)
    return IndexingResult("decode", "every frame, streamed", decoder, "-", len(clips), frames, timed["seconds"],
                          f"{decoded} stream frames decoded, one thread", cpu_s=timed["cpu_s"],
                          torch_threads=_threads())


def measure_embed(clips: Sequence[Path], decoder: str, indexer_spec: str) -> IndexingResult:
    """The model alone on already-decoded frames, one call per file as the pipeline makes."""
    from retrieval.pipeline.indexing import decode_job

    indexer = _load_indexer(indexer_spec)
    count = indexer.frames_per_unit
    with only_decoder(decoder):
        units = [[f.pixels for f in decode_job(_job(c, count)).frames[as_spec(count)]] for c in clips]
    with clock() as timed:
        for unit in units:
            indexer.embed_units(unit)
    frames = sum(len(u) for file in units for u in file)
    return IndexingResult("embed", "sampled", decoder, indexer_spec, len(clips), frames, timed["seconds"],
                          cpu_s=timed["cpu_s"], torch_threads=_threads())


def measure_pipeline(root: Path, decoder: str, indexer_spec: str, workers: int = 0,
                     segment_seconds: float | None = None, as_engine: bool = True) -> IndexingResult:
    """A real ``IndexRun`` into a fresh catalog: decode in worker processes, embed here, write DuckDB.

    ``as_engine``: torch threads as ``convis index`` sets them (the cores the decode workers leave);
    otherwise as the caller set them.
    """
    from contextlib import nullcontext

    from indexers.vision import cpu_threads
    from retrieval.engine import cores_left
    from retrieval.pipeline.distribute import ProcessDistributor
    from retrieval.pipeline.indexing import DECODER_MODULES, IndexRun
    from retrieval.store.catalog import Catalog

    workers = workers or max(1, (os.cpu_count() or 2) // 2)  # the engine's default
    pool = ProcessDistributor(workers)
    pool.start(DECODER_MODULES)  # as the engine does: workers start while the model loads
    try:
        indexer = _load_indexer(indexer_spec)
    except BaseException:
        pool.close()
        raise
    with tempfile.TemporaryDirectory(prefix="convis-perf-") as tmp:
        with Catalog(Path(tmp) / "catalog.duckdb") as catalog:
            distributor = OneDecoder(pool, decoder)
            run = IndexRun(catalog, Path(tmp), [indexer], distributor, segment_seconds)
            with cpu_threads([indexer], cores_left(pool)) if as_engine else nullcontext():
                threads = _threads()
                with clock() as timed:
                    report = run.run(Path(root))
    if report.failed:
        raise RuntimeError(f"indexing failed: {report.failed[0][0]}: {report.failed[0][1]}")
    detail = f"{workers} decode worker(s)" + (", torch threads as `convis index` sets them" if as_engine else "")
    return IndexingResult("end-to-end", "sampled", decoder, indexer_spec, report.indexed, report.frames,
                          timed["seconds"], detail, cpu_s=timed["cpu_s"], torch_threads=threads)


def measure_reference_pipeline(clips: Sequence[Path], decoder: str, indexer_spec: str) -> IndexingResult:
    """The paper's extraction end to end: per clip, decode every frame, embed every frame, average."""
    indexer = _load_indexer(indexer_spec)
    frames = 0
    with clock() as timed:
        for clip in clips:
            pixels = every_frame(clip, decoder)
            indexer.embed_units([pixels])
            frames += len(pixels)
            del pixels
    return IndexingResult("end-to-end", "every frame", decoder, indexer_spec, len(clips), frames,
                          timed["seconds"], "every frame embedded, then averaged", cpu_s=timed["cpu_s"],
                          torch_threads=_threads())


def _threads() -> int:
    import torch

    return torch.get_num_threads()


# ---------------------------------------------------------------- reranking


@dataclass(frozen=True)
class RerankResult:
    reranker: str
    pairs: int
    first_s: float  # cold: decode each clip, run the model on every pair, store the scores
    decodes: int  # clips decoded during the cold run (each clip once)
    repeat_s: float  # a new command asking the same: score cache only
    repeat_model_pairs: int
    repeat_decodes: int
    load_s: float  # building the reranker (weights), paid by every command that reranks
    peak_rss_mb: float = 0.0

    @property
    def per_pair_s(self) -> float:
        return self.first_s / max(1, self.pairs)

    @property
    def speedup(self) -> float:
        return self.first_s / self.repeat_s if self.repeat_s > 0 else math.inf


def tiny_reranker(folder: Path) -> str:
    """A tiny random Qwen2-VL checkpoint (bench/tiny/vlm.py): exercises the real code path on a CPU."""
    from bench.tiny.vlm import build_qwen_vl  # imports transformers: only a rerank measurement needs it

    return str(build_qwen_vl(Path(folder) / "qwen2-vl-tiny"))


def measure_rerank(clips: Sequence[Path], reranker_spec: str, concept: str = "location") -> RerankResult:
    """Score (first clip, each other clip) cold, then again as a new command with only the cache shared."""
    from rerankers.factory import create_reranker
    from retrieval.core.concepts import parse_concepts
    from retrieval.media.scan import content_hash
    from retrieval.search.rerank import ClipRef

    started = time.perf_counter()
    model = create_reranker(reranker_spec)
    load_s = time.perf_counter() - started
    refs = [ClipRef(str(c), content_hash(c)) for c in clips]
    pairs = [(refs[0], other) for other in refs[1:]]
    wanted = parse_concepts([concept])[0]
    with tempfile.TemporaryDirectory(prefix="convis-perf-") as tmp:
        first, first_s = _score_once(model, Path(tmp) / "scores.duckdb", pairs, wanted)
        repeat, repeat_s = _score_once(model, Path(tmp) / "scores.duckdb", pairs, wanted)
    return RerankResult(model.model_id, len(pairs), first_s, first.frames.decodes, repeat_s,
                        repeat.model_pairs, repeat.frames.decodes, load_s)


def _score_once(model, cache_path: Path, pairs, concept):
    from retrieval.search.rerank import FrameCache, PairScorer, ScoreCache

    started = time.perf_counter()
    cache = ScoreCache(cache_path)  # opened per command, as the engine does
    try:
        scorer = PairScorer(model, cache, FrameCache())
        scorer.score(pairs, concept)
        return scorer, time.perf_counter() - started
    finally:
        cache.close()


# ---------------------------------------------------------------- test footage


def write_test_video(path: Path, width: int, height: int, seconds: float, fps: int = 25,
                     bitrate: int = 2_000_000, preset: str = "ultrafast") -> Path:
    """H.264 footage of a moving pattern (PyAV, libx264), cheap to generate at any size.

    Frames are built directly in YUV 4:2:0 from a few shifted planes so that writing a long 4K
    file costs about the encoder's time, not numpy's.  Keyframes follow x264's default (every
    250 frames), as in typical camera or web footage.
    """
    import av

    y0 = _pattern(width, height)
    chroma = np.full((height // 2, width), 128, np.uint8)  # U then V plane, packed as yuv420p rows
    with av.open(str(path), "w") as out:
        stream = out.add_stream("libx264", rate=Fraction(fps))
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
        stream.bit_rate = bitrate
        stream.options = {"preset": preset}
        for i in range(int(seconds * fps)):
            luma = np.roll(y0, (i * 4) % width, axis=1)  # a pan: every frame differs
            frame = av.VideoFrame.from_ndarray(np.concatenate([luma, chroma]), format="yuv420p")
            frame.pts = i
            for packet in stream.encode(frame):
                out.mux(packet)
        for packet in stream.encode():
            out.mux(packet)
    return path


def _pattern(width: int, height: int) -> np.ndarray:
    x = np.arange(width, dtype=np.float32)[None, :]
    y = np.arange(height, dtype=np.float32)[:, None]
    return (128 + 60 * np.sin(x / 37) * np.cos(y / 23) + 40 * np.sin((x + y) / 97)).astype(np.uint8)


def make_clips(folder: Path, count: int = 2, seconds: float = 4.0) -> list[Path]:
    """Small synthetic clips (smoke runs and machines without footage)."""
    folder.mkdir(parents=True, exist_ok=True)
    return [write_test_video(folder / f"synthetic_{i:02d}.mp4", 160 + 32 * i, 96, seconds, fps=10,
                             bitrate=200_000) for i in range(count)]


# ---------------------------------------------------------------- a whole run


@dataclass
class PerfConfig:
    videos: Path | None = None  # None: examples/videos (or generated clips in smoke runs)
    indexer: str = "efficientnet-lite0"
    decoders: tuple[str, ...] = ("decord", "pyav")
    sizes: tuple[int, ...] = DEFAULT_SIZES
    dim: int = 768
    queries: int = 500  # held-out queries: 200 timed one by one, 5 batches of 100
    single: int = 200
    batches: int = 5
    repeat: int = 3  # indexing and reranking measurements: the median of this many runs
    copies: int = 1  # each clip indexed this many times (hard links), so fixed start-up costs amortise
    # indexing is measured once per entry; None is torch's default (one per core), as convis runs today
    torch_threads: tuple[int | None, ...] = (None,)
    reranker: str | None = None  # None: the tiny random Qwen2-VL
    long_video: Path | None = None
    segment: float | None = None  # for the long video
    sections: tuple[str, ...] = ("indexing", "recall", "rerank")
    isolate: bool = True
    smoke: bool = False

    @classmethod
    def smoke_run(cls, **overrides) -> "PerfConfig":
        """Seconds, not minutes: generated clips, a few thousand small vectors, one run each."""
        base = dict(sizes=(2000,), dim=32, queries=40, single=20, batches=2, repeat=1, isolate=False, smoke=True,
                    torch_threads=(1,))
        return cls(**{**base, **{k: v for k, v in overrides.items() if v is not None}})


@dataclass
class PerfReport:
    machine: dict
    config: dict
    indexing: list[IndexingResult] = field(default_factory=list)
    recall: list[RecallResult] = field(default_factory=list)
    rerank: list[RerankResult] = field(default_factory=list)
    long_video: list[IndexingResult] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    runs: list[dict] = field(default_factory=list)  # each run that measured a part: machine facts + command

    def as_dict(self) -> dict:
        return {
            "machine": self.machine, "config": self.config, "notes": self.notes, "runs": self.runs,
            "indexing": [_with_rates(r) for r in self.indexing],
            "recall": [asdict(r) for r in self.recall],
            "rerank": [{**asdict(r), "per_pair_s": r.per_pair_s, "speedup": r.speedup} for r in self.rerank],
            "long_video": [_with_rates(r) for r in self.long_video],
            "checks": [dict(zip(("target", "measured", "met"), c)) for c in checks(self)],
        }

    @classmethod
    def from_dict(cls, data: dict) -> "PerfReport":
        """Read back what ``as_dict`` wrote (``convis bench perf --json``)."""
        def rows(kind, key, derived=()):
            return [kind(**{k: v for k, v in row.items() if k not in derived}) for row in data.get(key, [])]

        rates = ("frames_per_s", "clips_per_min")
        return cls(data["machine"], data["config"], rows(IndexingResult, "indexing", rates),
                   rows(RecallResult, "recall"), rows(RerankResult, "rerank", ("per_pair_s", "speedup")),
                   rows(IndexingResult, "long_video", rates), list(data.get("notes", [])),
                   list(data.get("runs") or [data["machine"]]))


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


PARTS = ("indexing", "recall", "rerank", "long_video")


def _with_rates(r: IndexingResult) -> dict:
    return {**asdict(r), "frames_per_s": round(r.frames_per_s, 3), "clips_per_min": round(r.clips_per_min, 3)}


Progress = Callable[[str], None]


def run(config: PerfConfig, progress: Progress = lambda message: None,
        command: str = "convis bench perf") -> PerfReport:
    report = PerfReport(machine_info(), {k: str(v) for k, v in asdict(config).items()})
    with tempfile.TemporaryDirectory(prefix="convis-perf-") as tmp:
        source = _clip_folder(config, Path(tmp))
        originals = list_clips(source)
        if not originals and {"indexing", "rerank"} & set(config.sections):
            raise ValueError(f"no video files in {source}")
        if "indexing" in config.sections:
            root = _copies(source, Path(tmp) / "clips", config.copies) if config.copies > 1 else source
            report.indexing = run_indexing(config, root, list_clips(root), originals, progress)
        if "recall" in config.sections:
            report.recall = run_recall(config, Path(tmp), progress)
        if "rerank" in config.sections:
            report.rerank = run_rerank(config, originals, Path(tmp), progress)
        if config.long_video is not None:
            report.long_video = run_long_video(config, Path(tmp), progress)
    report.machine["load_after"] = _load()
    report.notes = notes(config)
    parts = [p for p in PARTS if getattr(report, p)]
    report.runs = [{**report.machine, "command": command, "parts": [p.replace("_", " ") for p in parts]}]
    return report


def _clip_folder(config: PerfConfig, tmp: Path) -> Path:
    if config.videos is not None:
        return Path(config.videos)
    if config.smoke:
        make_clips(tmp / "generated")
        return tmp / "generated"
    return ROOT / "examples" / "videos"


def _copies(source: Path, folder: Path, copies: int) -> Path:
    """``copies`` hard links (or copies) of every clip: a longer run of the same footage."""
    folder.mkdir()
    for clip in list_clips(source):
        for i in range(copies):
            target = folder / f"{i:02d}_{clip.name}"
            try:
                os.link(clip, target)
            except OSError:
                shutil.copy(clip, target)
    return folder


def _repeated(config: PerfConfig, fn: Callable, *args, threads: int | None = None):
    """The run with the median time of ``config.repeat`` runs (each isolated); peak memory is the largest."""
    runs = [measure(fn, *args, isolate=config.isolate, torch_threads=threads) for _ in range(max(1, config.repeat))]
    key = (lambda r: r.seconds) if hasattr(runs[0], "seconds") else (lambda r: r.first_s)
    chosen = sorted(runs, key=key)[len(runs) // 2]
    peak = max(r.peak_rss_mb for r in runs)
    if len(runs) > 1 and hasattr(chosen, "detail"):
        spread = f"median of {len(runs)}: {min(map(key, runs)):.2f}-{max(map(key, runs)):.2f} s"
        chosen = replace(chosen, detail="; ".join(filter(None, [chosen.detail, spread])))
    return replace(chosen, peak_rss_mb=peak)


def run_indexing(config: PerfConfig, root: Path, clips: list[Path], originals: list[Path],
                 progress: Progress) -> list[IndexingResult]:
    """Every stage on ``clips`` (with ``--copies``, each clip several times); the paper's way, tens of
    times slower, once on the ``originals`` (ratios compare clips per minute)."""
    count = _frames_per_unit(config.indexer)
    rows = []
    for decoder in config.decoders:
        decoding = [("decode, sampled", measure_decode, clips, decoder, count),
                    ("decode, every frame", measure_reference_decode, clips, decoder),
                    ("decode, every frame streamed", measure_streamed_decode, clips, decoder, count)]
        modelling = lambda threads: [  # noqa: E731
            ("embed", measure_embed, clips, decoder, config.indexer),
            ("end-to-end, sampled", measure_pipeline, root, decoder, config.indexer, 0, None, threads is None)]
        steps = [(None, config.repeat, *step) for step in decoding]  # decoding never touches torch
        steps += [(threads, config.repeat, *step) for threads in config.torch_threads for step in modelling(threads)]
        if decoder == config.decoders[0]:
            # the paper's way embeds every frame: tens of times slower, so measured once, with one decoder
            steps.append((config.torch_threads[0], 1, "end-to-end, every frame", measure_reference_pipeline,
                          originals, decoder, config.indexer))
        for threads, repeat, name, fn, *args in steps:
            progress(f"indexing: {decoder} {name}" + (f", torch threads {threads}" if threads else ""))
            row = _repeated(replace(config, repeat=repeat), fn, *args, threads=threads)
            rows.append(replace(row, setting="default" if threads is None else str(threads)))
    return rows


def _frames_per_unit(spec: str) -> int:
    from indexers.factory import create_indexer

    return create_indexer(spec).frames_per_unit


def run_recall(config: PerfConfig, tmp: Path, progress: Progress) -> list[RecallResult]:
    rows = []
    for size in config.sizes:
        folder = tmp / f"vectors-{size}"
        folder.mkdir()
        progress(f"recall: {size} x {config.dim} vectors, exact top-{RECALL_K}")
        data = measure(prepare_recall_data, str(folder), size, config.dim, config.queries, isolate=config.isolate)
        for label, factory, params in index_kinds(size, config.dim):
            progress(f"recall: {size} {label} {factory} {params}")
            rows.extend(measure(measure_index, data, label, factory, params, config.single, config.batches,
                                isolate=config.isolate))
        shutil.rmtree(folder)
    return rows


def run_rerank(config: PerfConfig, clips: list[Path], tmp: Path, progress: Progress) -> list[RerankResult]:
    spec = config.reranker or tiny_reranker(tmp)
    chosen = clips[: 2 if config.smoke else 9]
    progress(f"rerank: {len(chosen) - 1} pairs with {spec}")
    return [_repeated(config, measure_rerank, chosen, spec, threads=config.torch_threads[-1])]


def run_long_video(config: PerfConfig, tmp: Path, progress: Progress) -> list[IndexingResult]:
    """Index one long file alone (hard-linked into an empty folder) with each decoder."""
    folder = tmp / "long"
    folder.mkdir()
    target = folder / config.long_video.name
    try:
        os.link(config.long_video, target)
    except OSError:  # another file system; a symlink would be refused (it points outside the folder)
        shutil.copy(config.long_video, target)
    rows = []
    for segment in dict.fromkeys([None, config.segment]):
        for decoder in config.decoders:
            progress(f"long video: {decoder}" + (f", {segment:g} s segments" if segment else ""))
            row = measure(measure_pipeline, folder, decoder, config.indexer, 0, segment,
                          isolate=config.isolate, torch_threads=config.torch_threads[-1])
            rows.append(replace(row, detail=f"{row.detail}; " + (f"{segment:g} s segments" if segment
                                                                  else "one unit per file")))
    return rows


def machine_info() -> dict:
    import faiss
    import torch

    return {
        "cpus": os.cpu_count(), "python": sys.version.split()[0], "torch": torch.__version__,
        "faiss": faiss.__version__, "torch_threads": torch.get_num_threads(),
        "faiss_threads": faiss.omp_get_max_threads(),
        "blas_threshold": faiss.cvar.distance_compute_blas_threshold,
        "memory_gb": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1),
        "load_before": _load(), "date": time.strftime("%Y-%m-%d %H:%M"),
    }


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


# ---------------------------------------------------------------- targets and the report

TARGET_PIPELINE = 0.8  # end-to-end throughput over the slower of decode-only and embed-only
TARGET_SAMPLED_SPEEDUP = 10.0
TARGET_P50_MS = 5.0
TARGET_RECALL = 0.95
TARGET_LONG_VIDEO_MB = 2048
TARGET_CACHE_SPEEDUP = 100.0


def _find(rows: list[IndexingResult], stage: str, way: str, decoder: str,
          threads: str | None = None) -> IndexingResult | None:
    """The row for a stage under a --torch-threads setting; decode rows match any (no torch there)."""
    return next((r for r in rows if (r.stage, r.way, r.decoder) == (stage, way, decoder)
                 and (threads is None or stage == "decode" or r.setting == threads)), None)


def _settings(rows: list[IndexingResult]) -> list[tuple[str, str]]:
    """(decoder, --torch-threads setting) pairs that have model rows, in measuring order."""
    return list(dict.fromkeys((r.decoder, r.setting) for r in rows if r.stage != "decode"))


def checks(report: PerfReport) -> list[tuple[str, str, bool]]:
    """(target, what was measured, met?) for every target the report has numbers for."""
    found = []
    for decoder in dict.fromkeys(r.decoder for r in report.indexing):
        found += _decode_checks(report.indexing, decoder)
    for decoder, threads in _settings(report.indexing):
        found += _pipeline_checks(report.indexing, decoder, threads)
    found += _recall_checks(report.recall)
    for r in report.rerank:
        found.append(("cached rerank repeat >= 100x faster", f"{r.speedup:.0f}x ({r.first_s:.2f} s -> "
                      f"{r.repeat_s * 1e3:.1f} ms)", r.speedup >= TARGET_CACHE_SPEEDUP and r.repeat_model_pairs == 0))
        found.append(("rerank decodes each clip once per command", f"{r.decodes} decodes for {r.pairs + 1} clips",
                      r.decodes == r.pairs + 1 and r.repeat_decodes == 0))
    for r in report.long_video:
        found.append((f"long video ({r.decoder}) peaks below 2 GB RSS", f"{r.peak_rss_mb:.0f} MB",
                      r.peak_rss_mb < TARGET_LONG_VIDEO_MB))
    return found


def _pipeline_checks(rows: list[IndexingResult], decoder: str, threads: str) -> list[tuple[str, str, bool]]:
    get = partial(_find, rows, decoder=decoder, threads=threads)
    decode, embed, pipeline = get("decode", "sampled"), get("embed", "sampled"), get("end-to-end", "sampled")
    if not (decode and embed and pipeline):
        return []
    limit = min(decode.frames_per_s, embed.frames_per_s)
    share = pipeline.frames_per_s / limit
    return [(f"{decoder}, torch threads {threads}: end-to-end >= 80% of min(decode, embed)",
             f"{pipeline.frames_per_s:.1f} / {limit:.1f} frames/s = {share:.0%}", share >= TARGET_PIPELINE)]


def _decode_checks(rows: list[IndexingResult], decoder: str) -> list[tuple[str, str, bool]]:
    decode = _find(rows, "decode", "sampled", decoder)
    found = []
    for way, label in (("every frame", "every frame (the paper's way)"),
                       ("every frame, streamed", "every frame streamed on one thread")):
        reference = _find(rows, "decode", way, decoder)
        if decode and reference:
            ratio = reference.seconds / decode.seconds
            found.append((f"{decoder}: sampled decoding >= 10x faster than {label}",
                          f"{ratio:.1f}x ({reference.seconds:.2f} s vs {decode.seconds:.2f} s)",
                          ratio >= TARGET_SAMPLED_SPEEDUP))
    return found


def _recall_checks(rows: list[RecallResult]) -> list[tuple[str, str, bool]]:
    largest = max((r.vectors for r in rows), default=0)
    auto = [r for r in rows if r.vectors == largest and "(auto)" in r.index and r.batch == 1]
    return [(f"auto index at {largest:,} x {r.dim}: one query p50 <= 5 ms, recall@100 >= 0.95",
             f"{r.factory} {r.params}".strip() + f": p50 {r.p50_ms:.2f} ms, recall@100 {r.recall_at_100:.3f}",
             r.p50_ms <= TARGET_P50_MS and r.recall_at_100 >= TARGET_RECALL) for r in auto]


def notes(config: PerfConfig) -> list[str]:
    out = [
        "Times are wall-clock on a shared machine; indexing and reranking rows are the median of "
        f"{config.repeat} run(s), each in a fresh process" + ("" if config.isolate else " (smoke: in-process)") + ".",
        "Peak RSS is sampled every 10 ms over the measuring process and its children (decode workers), "
        "floored by the process's own ru_maxrss.",
        "decode, sampled: `decode_job` as a pipeline worker runs it (probe, decode the sampled frames resized "
        "in the decoder, content hash), one process. decode, every frame: the paper's extraction reads a video as "
        "decord `VideoReader(path, ctx=cpu(0)).get_batch(range(len))` (full-size RGB, every frame held, decord's "
        "default threads); PyAV decodes every frame to RGB likewise. decode, every frame, streamed: the cheapest "
        "every-frame decode (one thread, frame by frame, only the sampled frames kept and resized: the same frames "
        "ours hands the model).",
        "embed: the indexer on already-decoded frames, one call per file. end-to-end, sampled: a real `IndexRun` "
        "(worker-process decoding with one task queued ahead, embedding, DuckDB writes, FAISS rebuild) into a "
        "fresh catalog; end-to-end, every frame: the paper's DINOv2/CLIP extraction (decode every frame, embed "
        "every frame, average), in one process, measured once with the first decoder.",
        f"Recall: {MIXTURE_COMPONENTS}-component Gaussian mixture of unit vectors (random centre + rank-16 "
        "subspace + isotropic noise), held-out queries from the same mixture; recall@100 against exact "
        "inner-product search; indices built through `VectorIndex.build` (IDMap2 wrapper). Batch-1 searches run "
        "on one OpenMP thread (VectorIndex does this below 20 queries), batches on all cores. "
        "convis lowers `faiss.cvar.distance_compute_blas_threshold` to 20 for batches of 20+ queries (BLAS), "
        "and leaves FAISS's value for fewer; "
        "the `exact, FAISS's BLAS threshold` row repeats the exact batch with the value FAISS ships.",
    ]
    if config.reranker is None:
        out.append("Reranking uses a tiny randomly initialised Qwen2-VL (bench/tiny/vlm.py) on the CPU: it measures "
                   "the pipeline (decode once, model call, score cache), not a real LMM's cost, which is seconds "
                   "to minutes per pair on a CPU.")
    return out


def markdown(report: PerfReport) -> str:
    parts = ["# Performance\n"] + [_run_line(run) for run in report.runs or [report.machine]]
    if report.indexing:
        parts += ["## Indexing\n", _table(_INDEXING_HEAD, [_indexing_row(r) for r in report.indexing])]
        parts += [_table(_RATIO_HEAD, _ratio_rows(report.indexing))]
    if report.long_video:
        parts += ["## One long video\n", _table(_INDEXING_HEAD, [_indexing_row(r) for r in report.long_video])]
    if report.recall:
        parts += ["## Recall\n", _table(_RECALL_HEAD, [_recall_row(r) for r in report.recall])]
    if report.rerank:
        parts += ["## Reranking\n", _table(_RERANK_HEAD, [_rerank_row(r) for r in report.rerank])]
    found = checks(report)
    if found:
        parts += ["## Targets\n", _table(["target", "measured", "met"],
                                          [[t, v, "yes" if ok else "**no**"] for t, v, ok in found])]
    parts += ["## How it was measured\n", "\n".join(f"- {n}" for n in report.notes) + "\n"]
    return "\n".join(parts)


def _run_line(m: dict) -> str:
    parts = f" ({', '.join(m['parts'])})" if m.get("parts") else ""
    return (f"Produced by `{m.get('command', 'convis bench perf')}`{parts} on {m['date']}: {m['cpus']} CPUs, "
            f"{m['memory_gb']} GiB RAM, Python {m['python']}, torch {m['torch']} ({m['torch_threads']} threads), "
            f"FAISS {m['faiss']} ({m['faiss_threads']} threads, distance_compute_blas_threshold "
            f"{m['blas_threshold']}); load average {m['load_before']} before, {m.get('load_after', '?')} after.\n")


_INDEXING_HEAD = ["stage", "way", "decoder", "indexer", "clips", "frames", "seconds", "frames/s", "clips/min",
                  "CPU s", "cores busy", "torch threads", "peak RSS MB", "detail"]
_RATIO_HEAD = ["decoder", "torch threads", "decode: every frame / sampled",
               "decode: every frame streamed / sampled", "end-to-end: every frame / sampled",
               "end-to-end / min(decode, embed)"]
_RECALL_HEAD = ["vectors", "index", "factory", "search params", "batch", "queries", "threads", "p50 ms", "p95 ms",
                "recall@100", "build s", "peak RSS MB"]
_RERANK_HEAD = ["reranker", "pairs", "load s", "first run s", "s / pair", "decodes", "cached repeat ms",
                "speed-up", "model pairs on repeat", "peak RSS MB"]


def _table(head: list[str], rows: list[list]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def _indexing_row(r: IndexingResult) -> list:
    return [r.stage, r.way, r.decoder, r.indexer, r.clips, r.frames, f"{r.seconds:.2f}", f"{r.frames_per_s:.1f}",
            f"{r.clips_per_min:.1f}", f"{r.cpu_s:.1f}", f"{r.cpu_s / r.seconds:.2f}" if r.seconds else "",
            "-" if r.stage == "decode" else r.torch_threads, f"{r.peak_rss_mb:.0f}", r.detail]


def _ratio_rows(rows: list[IndexingResult]) -> list[list]:
    out = []
    for decoder, threads in _settings(rows):
        get = partial(_find, rows, decoder=decoder, threads=threads)
        ratio = lambda a, b: f"{b.clips_per_min / a.clips_per_min:.2f}x" if a and b else ""  # noqa: E731
        decode, embed, pipe = get("decode", "sampled"), get("embed", "sampled"), get("end-to-end", "sampled")
        share = f"{pipe.frames_per_s / min(decode.frames_per_s, embed.frames_per_s):.0%}" \
            if decode and embed and pipe else ""
        reference = _find(rows, "end-to-end", "every frame", decoder)  # measured at one thread setting
        out.append([decoder, threads, ratio(get("decode", "every frame"), decode),
                    ratio(get("decode", "every frame, streamed"), decode), ratio(reference, pipe), share])
    return out


def _recall_row(r: RecallResult) -> list:
    return [f"{r.vectors:,}", r.index, r.factory, r.params or "-", r.batch, r.queries, r.threads,
            f"{r.p50_ms:.2f}", f"{r.p95_ms:.2f}", f"{r.recall_at_100:.4f}", f"{r.build_s:.1f}", f"{r.peak_rss_mb:.0f}"]


def _rerank_row(r: RerankResult) -> list:
    return [r.reranker, r.pairs, f"{r.load_s:.2f}", f"{r.first_s:.2f}", f"{r.per_pair_s:.3f}", r.decodes,
            f"{r.repeat_s * 1e3:.1f}", f"{r.speedup:.0f}x", r.repeat_model_pairs, f"{r.peak_rss_mb:.0f}"]
