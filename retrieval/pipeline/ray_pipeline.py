"""Indexing and task distribution on a Ray cluster.

``index_with_ray`` runs the local indexing pipeline with its work spread over Ray:

    scan + plan (here, against the catalog, exactly as ``IndexRun`` does)
      -> Ray Data: decode ``decode_job`` in a pool of CPU actors; each file in a subprocess of the
         actor with a time limit, so a hung or crashing decoder still costs one file
      -> Ray Data: embed in an actor pool holding every visual indexer (one GPU per actor when the
         cluster has GPUs, else CPU actors)
      -> here: embedding shards under INDEX_DIR/shards/<run-id>/, then the catalog, one transaction
         per file, in scan order, through ``IndexRun``'s own writer

The shards make a run resumable beyond the catalog: a file whose vectors reached a shard is not
embedded again by a later run, even if this one died before merging it.  A shard is an ``.npz`` of
vectors plus a ``.json`` sidecar written last; the sidecars are the manifest, keyed by path, size,
mtime, segment length, decode size and every indexer with its frame count.  Once a run has merged
everything, the shards are deleted: the catalog is the source of truth.

``RayDistributor`` implements the ``Distributor`` protocol on Ray tasks (reranking pairs, FAISS
shard filling, anything that maps a function over items).
"""

from __future__ import annotations

import json
import logging
import math
import os
import pickle
import shutil
import sys
import time
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Sequence

import numpy as np

from indexers.base import Indexer
from retrieval.core.errors import one_line
from retrieval.core.files import atomic_write_bytes
from retrieval.media.frames import Frames, Span, VideoInfo
from retrieval.media.scan import FoundFile
from retrieval.pipeline.distribute import ProcessDistributor, SerialDistributor, TaskFailed
from retrieval.pipeline.indexing import (
    PUBLISH_EVERY,
    DecodedFile,
    DecodeJob,
    IndexReport,
    IndexRun,
    Progress,
    reason_of,
)
from retrieval.store.catalog import Catalog

SHARDS_DIRNAME = "shards"
LOCAL = {None, "", "local"}  # addresses that mean "start a Ray instance on this machine"
_NO_PIXELS = np.zeros((0, 0, 0, 3), np.uint8)  # frames keep their times, not their pixels, after embedding


class RayUnavailable(RuntimeError):
    """Ray is not installed or no cluster answers at the given address."""


class RemoteFailure(Exception):
    """A file's failure reason, carried back from a Ray worker as plain text (always picklable)."""


@dataclass
class EmbeddedFile(DecodedFile):
    """A decoded file after embedding: frames keep times and indices only; ``error`` = embedding failed."""

    vectors: dict[str, np.ndarray] = field(default_factory=dict)
    error: str | None = None


@dataclass
class RayOptions:
    address: str | None = "auto"
    device: str | None = None  # None: each actor picks its GPU when it has one
    trust_remote_code: bool = False
    timeout: float = 300.0  # seconds per file to decode
    decode_batch: int = 4  # files per decode call: amortises the isolating subprocess's start
    isolate: bool = True  # decode in a subprocess (timeout, crash isolation); False trusts the decoders
    embed_actors: int | None = None  # default: one per GPU, else one
    embed_cpus: float = 1.0  # CPUs each embed actor reserves (and the torch threads it uses)
    shard_files: int = 32  # files per shard (what an interrupted run can lose at most)
    shard_seconds: float = 30.0
    runtime_env: dict | None = None


@dataclass
class RayIndexReport(IndexReport):
    computed: int = 0  # files decoded and embedded on Ray in this run
    reused: int = 0  # files whose vectors came from shards of an earlier, interrupted run
    shards: int = 0  # shards written by this run

    def as_dict(self) -> dict:
        return {**super().as_dict(), "ray": {"computed": self.computed, "reused": self.reused,
                                             "shards": self.shards}}


# -- connecting -------------------------------------------------------------------------------------
def connect(address: str | None, runtime_env: dict | None = None) -> bool:
    """Join (or start) Ray; True when this call started the session, so the caller ends it."""
    try:
        import ray
    except ImportError:
        raise RayUnavailable('Ray is not installed: pip install "ray[data]"') from None
    if ray.is_initialized():
        return False
    local = address in LOCAL
    env = runtime_env if runtime_env is not None else code_runtime_env(local)
    try:
        ray.init(address=None if local else address, runtime_env=env, include_dashboard=False if local else None,
                 logging_level="warning", log_to_driver=False)
    except ConnectionError as exc:
        raise RayUnavailable(f"no Ray cluster answers at {address!r} ({one_line(exc, 160)}); "
                             "start one with `ray start --head` or use --ray local") from None
    _quiet_ray_data()
    return True


def code_runtime_env(local: bool = True) -> dict:
    """Workers must import the same convis code as this process.

    A local instance gets this checkout on PYTHONPATH; a cluster gets the packages uploaded
    (its nodes still need the same third-party packages installed).
    """
    import indexers

    # the package this module belongs to (already imported); importing it by name would pull in its
    # lazily exported Engine, a layer above
    retrieval = sys.modules[__name__.partition(".")[0]]
    if not local:
        import rerankers

        return {"py_modules": [retrieval, indexers, rerankers]}
    root = str(Path(retrieval.__file__).resolve().parents[1])
    return {"env_vars": {"PYTHONPATH": os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)}}


def _quiet_ray_data() -> None:
    # convis reports progress itself; Ray Data's progress lines would interleave with it
    from ray.data import DataContext

    ctx = DataContext.get_current()
    ctx.enable_progress_bars = False
    ctx.print_on_execution_start = False
    ctx.enable_auto_log_stats = False
    logging.getLogger("ray.data").setLevel(logging.WARNING)


# -- the shard store --------------------------------------------------------------------------------
def _file_key(job: DecodeJob) -> tuple:
    f = job.file
    return f.rel, f.size, f.mtime, job.segment_seconds, job.short_side


class ShardStore:
    """Embedding shards under ``root/<run-id>/``; the ``.json`` sidecars are the manifest."""

    def __init__(self, root: Path):
        self.root = Path(root)
        # named by start time (the manifest reads runs in that order) and unique within it
        self.run_dir = self.root / f"{time.strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:8]}"
        self.written = 0
        self._manifest: dict[tuple, tuple[Path, int, dict]] | None = None

    def find(self, job: DecodeJob, need: dict[str, int]) -> EmbeddedFile | None:
        """The file's vectors from an earlier shard, if one holds every needed indexer at its frame count."""
        hit = self.manifest().get(_file_key(job))
        if hit is None:
            return None
        npz, pos, entry = hit
        if any(entry["vectors"].get(m) != frames for m, frames in need.items()):
            return None
        try:
            return _from_entry(npz, pos, entry, need)
        except Exception:  # truncated zip, missing array, bad JSON: a damaged shard is recomputed, never trusted
            return None

    def manifest(self) -> dict[tuple, tuple[Path, int, dict]]:
        if self._manifest is None:
            self._manifest = {}
            for sidecar in sorted(self.root.glob("*/*.json")):  # later runs and shards win
                for pos, entry in enumerate(_read_sidecar(sidecar)):
                    self._manifest[tuple(entry["key"])] = (sidecar.with_suffix(".npz"), pos, entry)
        return self._manifest

    def write(self, items: Sequence[tuple[DecodeJob, EmbeddedFile]], frames: dict[str, int]) -> Path:
        """One shard (``frames``: each indexer's frames per unit); vectors first, the sidecar last,
        so a shard without its sidecar does not exist."""
        self.run_dir.mkdir(parents=True, exist_ok=True)
        base = self.run_dir / f"{self.written:06d}"
        arrays, entries = {}, []
        for pos, (job, done) in enumerate(items):
            entries.append(_entry(job, done, frames))
            arrays.update({f"{pos}_{j}": v for j, v in enumerate(done.vectors.values())})
        atomic_write_bytes(base.with_suffix(".npz"), lambda fh: np.savez(fh, **arrays))
        text = json.dumps({"version": 1, "files": entries}, default=_plain)
        atomic_write_bytes(base.with_suffix(".json"), lambda fh: fh.write(text.encode()))
        self.written += 1
        return base.with_suffix(".json")

    def clear(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)
        self._manifest = None


def _entry(job: DecodeJob, done: EmbeddedFile, per_indexer: dict[str, int]) -> dict:
    # one group per frame spec; only the unit timestamps are read back, so the specs need not be
    frames = [[[np.asarray(f.timestamps).tolist(), list(f.indices)] for f in fs] for fs in done.frames.values()]
    return {
        "key": list(_file_key(job)), "content_hash": done.content_hash, "info": asdict(done.info),
        "spans": [[s.segment, s.start, s.end] for s in done.spans], "frames": frames,
        "order": list(done.vectors), "vectors": {m: per_indexer[m] for m in done.vectors},
    }


def _from_entry(npz: Path, pos: int, entry: dict, need: dict[str, int]) -> EmbeddedFile:
    with np.load(npz) as data:
        vectors = {m: data[f"{pos}_{entry['order'].index(m)}"] for m in need}
    groups = entry["frames"].values() if isinstance(entry["frames"], dict) else entry["frames"]  # dict: older shards
    frames = {n: [Frames(_NO_PIXELS, np.asarray(ts, dtype=np.float64), tuple(ix)) for ts, ix in units]
              for n, units in enumerate(groups)}
    spans = [Span(int(s), float(a), float(b)) for s, a, b in entry["spans"]]
    return EmbeddedFile(VideoInfo(**entry["info"]), entry["content_hash"], spans, frames, vectors)


def _read_sidecar(path: Path) -> list[dict]:
    try:
        return json.loads(path.read_text())["files"] if path.with_suffix(".npz").is_file() else []
    except (OSError, ValueError, KeyError):
        return []


def _plain(value: Any) -> Any:
    return value.item() if hasattr(value, "item") else str(value)  # numpy scalars in decoder metadata


# -- Ray Data stages (run on the cluster) ----------------------------------------------------------
class _Decoder:
    """A Ray actor that decodes a few files per call; each in a subprocess with a time limit unless
    ``isolate`` is off (the subprocesses fork from a server that imported the decoders once)."""

    def __init__(self, fn: Callable, timeout: float, isolate: bool):
        self.fn = fn
        self.runner = ProcessDistributor(1, timeout) if isolate else SerialDistributor()
        context = getattr(self.runner, "context", None)
        if context is not None and context.get_start_method() == "forkserver":
            context.set_forkserver_preload(["retrieval.pipeline.indexing"])

    def __call__(self, batch: dict) -> dict:
        jobs = [pickle.loads(blob) for blob in batch["job"]]
        results = {job.file.rel: result for job, result in self.runner.map(self.fn, jobs)}
        blobs = [pickle.dumps(_portable(results[job.file.rel])) for job in jobs]
        return {"i": batch["i"], "blob": np.array(blobs, dtype=object)}


def _portable(result: Any) -> Any:
    # the reason text is what the catalog stores; an arbitrary exception may not unpickle elsewhere
    return RemoteFailure(reason_of(result)) if isinstance(result, BaseException) else result


class _Embedder:
    """A Ray actor holding every visual indexer; embeds one decoded file per call."""

    def __init__(self, specs: list[tuple[str, int]], device: str | None, trust_remote_code: bool, threads: int,
                 protocol: str = "fast"):
        import torch

        from indexers.factory import create_indexer

        torch.set_num_threads(max(1, threads))
        extra = {"trust_remote_code": True} if trust_remote_code else {}
        self.models: list[tuple[str, Indexer]] = []
        for model_id, frames in specs:
            model = create_indexer(model_id, protocol=protocol, device=device, **extra)
            if model.kind == "image" and model.frame_spec.rule != "every":  # every frame stays every frame
                model.frames_per_unit = frames  # the run's --frames override, as Engine.index applies it
            self.models.append((model_id, model))

    def __call__(self, batch: dict) -> dict:
        blobs = [pickle.dumps(self._embed(pickle.loads(blob))) for blob in batch["blob"]]
        return {"i": batch["i"], "blob": np.array(blobs, dtype=object)}

    def _embed(self, decoded: Any) -> Any:
        if isinstance(decoded, BaseException):
            return decoded
        try:
            vectors = {model_id: np.asarray(m.embed_units([f.pixels for f in decoded.frames[m.frame_spec]]),
                                            dtype=np.float32) for model_id, m in self.models}
            error = None
        except Exception as exc:  # a model error costs this file, as in the local run
            vectors, error = {}, reason_of(exc)
        frames = {n: [Frames(_NO_PIXELS, f.timestamps, f.indices) for f in fs] for n, fs in decoded.frames.items()}
        return EmbeddedFile(decoded.info, decoded.content_hash, decoded.spans, frames, vectors, error)


# -- the distributor-shaped stage that IndexRun drives ----------------------------------------------
class RayEmbedStage:
    """``map(decode_job, jobs)`` -> (job, EmbeddedFile or failure) in job order: shards first, Ray for the rest.

    Every computed file is written to a shard before it is handed on to the catalog writer,
    and whatever was computed is written when the run is interrupted.
    """

    def __init__(self, models: Sequence[Indexer], shards: ShardStore, options: RayOptions):
        self.need = {m.model_id: m.frames_per_unit for m in models}
        self.protocol = next((m.protocol for m in models), "fast")  # the index's; the actors build models alike
        self.shards, self.options = shards, options
        self.computed = self.reused = 0
        self._flushed = time.monotonic()

    def map(self, fn: Callable, jobs: Iterable[DecodeJob]) -> Iterator[tuple[DecodeJob, Any]]:
        jobs = list(jobs)
        ready = self._from_shards(jobs)  # job index -> result, until handed on
        todo = [i for i in range(len(jobs)) if i not in ready]
        pending: list[tuple[int, EmbeddedFile]] = []  # computed, not yet in a shard
        stream = self._stream(fn, [jobs[i] for i in todo]) if todo else iter(())
        try:
            nxt = 0
            for k, result in stream:
                self._arrived(todo[k], result, jobs, pending, ready)
                nxt = yield from _release(jobs, ready, nxt)
            self._flush(jobs, pending, ready)
            yield from _release(jobs, ready, nxt)
        finally:
            self._flush(jobs, pending, ready)  # an interrupted run keeps what it computed
            close = getattr(stream, "close", None)
            if close:
                close()

    def _from_shards(self, jobs: list[DecodeJob]) -> dict[int, Any]:
        found = {i: self.shards.find(job, self.need) for i, job in enumerate(jobs)}
        ready = {i: done for i, done in found.items() if done is not None}
        self.reused = len(ready)
        return ready

    def _arrived(self, i: int, result: Any, jobs, pending: list, ready: dict[int, Any]) -> None:
        self.computed += 1
        if isinstance(result, EmbeddedFile) and result.error is None:
            pending.append((i, result))
        else:
            ready[i] = result  # failures go to the catalog as they are, never to a shard
        o = self.options
        if len(pending) >= o.shard_files or time.monotonic() - self._flushed > o.shard_seconds:
            self._flush(jobs, pending, ready)

    def _flush(self, jobs, pending: list[tuple[int, EmbeddedFile]], ready: dict[int, Any]) -> None:
        if not pending:
            return
        self.shards.write([(jobs[i], done) for i, done in pending], self.need)
        ready.update(pending)
        pending.clear()
        self._flushed = time.monotonic()

    def _stream(self, fn: Callable, jobs: list[DecodeJob]) -> Iterator[tuple[int, Any]]:
        """(position in ``jobs``, result) as Ray finishes them."""
        import ray

        started = connect(self.options.address, self.options.runtime_env)
        try:
            for batch in self._dataset(fn, jobs).iter_batches(batch_size=None, batch_format="numpy"):
                for k, blob in zip(batch["i"], batch["blob"]):
                    yield int(k), pickle.loads(blob)
        finally:
            if started:
                ray.shutdown()

    def _dataset(self, fn: Callable, jobs: list[DecodeJob]):
        import ray.data

        _quiet_ray_data()
        o = self.options
        per_task = max(1, o.decode_batch)
        rows = [{"i": k, "job": pickle.dumps(job)} for k, job in enumerate(jobs)]
        ds = ray.data.from_items(rows, override_num_blocks=math.ceil(len(rows) / per_task))
        resources = ray.cluster_resources()
        gpus = int(resources.get("GPU", 0)) if not (o.device or "").startswith("cpu") else 0
        actors = o.embed_actors or max(1, gpus)
        decoders = _decoder_slots(resources.get("CPU", 1), actors * o.embed_cpus)
        # decoding in actors of its own: Ray Data never fuses two actor stages, and fused into the
        # embed actors decoding would leave the GPUs idle
        ds = ds.map_batches(_Decoder, batch_size=per_task, batch_format="numpy", num_cpus=1,
                            compute=ray.data.ActorPoolStrategy(min_size=1, max_size=decoders),
                            fn_constructor_kwargs={"fn": fn, "timeout": o.timeout, "isolate": o.isolate})
        specs = list(self.need.items())
        return ds.map_batches(_Embedder, batch_size=1, batch_format="numpy",
                              compute=ray.data.ActorPoolStrategy(size=actors),
                              num_gpus=1 if gpus else 0, num_cpus=o.embed_cpus,  # a GPU each, when there are any
                              fn_constructor_kwargs={"specs": specs, "device": o.device,
                                                     "trust_remote_code": o.trust_remote_code,
                                                     "threads": max(1, int(o.embed_cpus)),
                                                     "protocol": self.protocol})


def _decoder_slots(cpus: float, embedding: float) -> int:
    """How many decode actors fit beside the embed actors (at least one, or the pipeline would stall)."""
    free = int(cpus - embedding)
    if free < 1:
        raise ValueError(f"the Ray cluster has {cpus:g} CPUs and the embed actors reserve {embedding:g}: "
                         "nothing is left to decode on; lower embed_cpus or embed_actors")
    return free


def _release(jobs: list, ready: dict[int, Any], nxt: int):
    """Hand on results in job order (the order a local run commits them, so ids match)."""
    while nxt in ready:
        yield jobs[nxt], ready.pop(nxt)
        nxt += 1
    return nxt


# -- the run ----------------------------------------------------------------------------------------
class RayIndexRun(IndexRun):
    """``IndexRun`` with decoding and embedding on Ray; planning, writing and publishing are its own."""

    def __init__(self, catalog: Catalog, index_dir: Path, indexers: Sequence[Indexer], options: RayOptions,
                 segment_seconds: float | None = None, captions: Path | None = None,
                 progress: Progress | None = None, publish_every: float = PUBLISH_EVERY):
        visual = [ix for ix in indexers if ix.kind != "text"]
        self.stage = RayEmbedStage(visual, ShardStore(Path(index_dir) / SHARDS_DIRNAME), options)
        super().__init__(catalog, Path(index_dir), indexers, self.stage, segment_seconds, captions, progress,
                         publish_every)
        self.report = RayIndexReport(self.report.indexers)

    def run(self, root: Path) -> RayIndexReport:
        report = super().run(root)
        report.computed, report.reused, report.shards = self.stage.computed, self.stage.reused, \
            self.stage.shards.written
        self.stage.shards.clear()  # all merged: the catalog holds everything the shards did
        return report

    def _store(self, found: FoundFile, done: EmbeddedFile) -> None:
        """Write precomputed vectors exactly where ``IndexRun._store`` writes the ones it computes."""
        if done.error is not None:
            raise RemoteFailure(done.error)  # IndexRun records it as "embedding failed: ..."
        vectors = done.vectors
        if found.rel in self._missing:
            vectors = {m: v for m, v in vectors.items() if found.rel not in self.catalog.indexed_with(m)}
        self._commit(found, done, vectors)


def index_with_ray(catalog: Catalog, index_dir: str | Path, indexers: Sequence[Indexer], folder: str | Path,
                   address: str | None = "auto", segment_seconds: float | None = None,
                   captions: str | Path | None = None, progress: Progress | None = None,
                   publish_every: float = PUBLISH_EVERY, **options) -> RayIndexReport:
    """Index ``folder`` into ``catalog`` with decoding and embedding on Ray (see the module doc).

    ``indexers`` are the built models (the catalog records their identities; Ray actors rebuild
    them from ``model_id``); ``options`` are ``RayOptions`` fields (device, timeout, shard_files, ...).
    """
    run = RayIndexRun(catalog, Path(index_dir), indexers, RayOptions(address=address, **options),
                      segment_seconds, Path(captions) if captions else None, progress, publish_every)
    return run.run(Path(folder).resolve())


# -- a Distributor on Ray tasks ---------------------------------------------------------------------
class RayDistributor:
    """Each item is one Ray task; at most ``in_flight`` run at once; results come as they finish.

    Like ``ProcessDistributor``: a task past ``timeout`` is cancelled (its worker killed) and
    reported as ``TaskFailed``, a task whose worker dies costs that item only, and an exception
    raised by ``fn`` is yielded as that exception.  Ray reuses worker processes, so ``fn`` can
    keep a loaded model in a module-level cache and pay for it once per worker.
    """

    def __init__(self, address: str | None = "auto", timeout: float = 300.0, num_cpus: float = 1,
                 num_gpus: float = 0, in_flight: int | None = None, runtime_env: dict | None = None):
        self.address, self.timeout = address, timeout
        self.num_cpus, self.num_gpus = num_cpus, num_gpus
        self.in_flight, self.runtime_env = in_flight, runtime_env

    def map(self, fn, items):
        import ray

        started = connect(self.address, self.runtime_env)
        # max_retries=0: a task that kills its worker costs its item, it is not run again
        remote = ray.remote(num_cpus=self.num_cpus, num_gpus=self.num_gpus, max_retries=0)(_apply)
        function = ray.put(fn)  # shipped once, not with every task; any picklable callable works
        limit = self.in_flight or max(1, int(ray.cluster_resources().get("CPU", 1) // max(self.num_cpus, 1e-3)))
        queue, running = iter(items), {}
        try:
            while True:
                _fill(queue, running, lambda item: remote.remote(function, item), limit)
                if not running:
                    return
                done, _ = ray.wait(list(running), num_returns=1, timeout=self._wait_time(running))
                for ref in done:
                    item, _ = running.pop(ref)
                    yield item, _outcome(ref)
                yield from self._expire(running)
        finally:
            for ref in running:
                ray.cancel(ref, force=True)
            if started:
                ray.shutdown()

    def _wait_time(self, running: dict) -> float:
        oldest = min(started for _, started in running.values())
        return max(0.05, self.timeout - (time.monotonic() - oldest))

    def _expire(self, running: dict):
        import ray

        now = time.monotonic()
        for ref, (item, started) in list(running.items()):
            if now - started > self.timeout:
                ray.cancel(ref, force=True)  # force: a task stuck in C code only stops with its worker
                del running[ref]
                yield item, TaskFailed(f"timed out after {self.timeout:.0f} s")


def _apply(fn: Callable, item: Any) -> Any:
    return fn(item)


def _fill(queue: Iterator, running: dict, submit: Callable, limit: int) -> None:
    while len(running) < limit:
        item = next(queue, _END)
        if item is _END:
            return
        running[submit(item)] = (item, time.monotonic())


_END = object()


def _outcome(ref) -> Any:
    import ray
    from ray.exceptions import RayTaskError, TaskCancelledError, WorkerCrashedError

    try:
        return ray.get(ref)
    except RayTaskError as exc:
        cause = getattr(exc, "cause", None)
        return cause if isinstance(cause, Exception) else exc
    except (WorkerCrashedError, TaskCancelledError) as exc:
        return TaskFailed(f"task crashed (its Ray worker died): {type(exc).__name__}")
    except Exception as exc:  # node lost, object lost, ...: this item failed, the others go on
        return TaskFailed(reason_of(exc))
