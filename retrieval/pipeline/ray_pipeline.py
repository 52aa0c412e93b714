"""The Ray executor: an indexing run's decoding and embedding on a Ray cluster.

``RayExecutor`` gives ``IndexRun`` the files it plans, decoded and embedded on Ray:

    scan + plan (here, against the catalog: ``IndexRun``, as in a local run)
      -> Ray Data: decode ``decode_job`` in a pool of CPU actors; each file in a subprocess of the
         actor with a time limit, so a hung or crashing decoder still costs one file
      -> Ray Data: ``embed_file`` in an actor pool holding every visual indexer (one GPU per actor
         when the cluster has GPUs, else CPU actors)
      -> here: embedding shards under INDEX_DIR/shards/<run-id>/, then the catalog, one transaction
         per file, in scan order, by ``IndexRun``, which commits a local run's files the same way

The shards make a run resumable beyond the catalog: a file whose vectors reached a shard is not
embedded again by a later run, even if this one died before merging it.  A shard is an ``.npz`` of
vectors plus a ``.json`` sidecar written last; the sidecars are the manifest, keyed by path, size,
mtime, segment length, decode size and every indexer with its frame count.  Once a run has merged
everything, the shards are deleted: the catalog is the source of truth.
"""

from __future__ import annotations

import json
import logging
import math
import os
import pickle
import shutil
import time
import uuid
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Iterator, Sequence

import numpy as np

import indexers
import rerankers
import retrieval
from indexers.base import Indexer, apply_frames
from indexers.factory import create_indexer
from retrieval.core.errors import ConvisError, one_line
from retrieval.core.files import atomic_write_bytes
from retrieval.core.segmentation import segmentation_label
from retrieval.media.frames import Frames, Span, VideoInfo
from retrieval.pipeline import stages
from retrieval.pipeline.distribute import ProcessDistributor, SerialDistributor
from retrieval.pipeline.ray_describe import ray_captioner
from retrieval.pipeline.run import IndexReport
from retrieval.pipeline.settings import DECODE_TIMEOUT

SHARDS_DIRNAME = "shards"
LOCAL = {None, "", "local"}  # addresses that mean "start a Ray instance on this machine"


class RayUnavailable(ConvisError, RuntimeError):
    """Ray is not installed or no cluster answers at the given address."""

    exit_code, http_status = 2, 503


class RemoteFailure(ConvisError):
    """A file's failure reason, carried back from a Ray worker as plain text (always picklable)."""

    exit_code, http_status = 1, 500
    label = "internal error"

    def __init__(self, reason: str, transient: bool = False):
        super().__init__(reason)
        self.transient = transient

    def __reduce__(self):
        return RemoteFailure, (str(self), self.transient)


@dataclass
class RayOptions:
    address: str | None = "auto"
    device: str | None = None  # None: each actor picks its GPU when it has one
    trust_remote_code: bool = False
    timeout: float = DECODE_TIMEOUT  # seconds per file to decode
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
        import ray  # ray: optional, only the --ray path pays for importing it
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
    if not local:
        return {"py_modules": [retrieval, indexers, rerankers]}
    root = str(Path(retrieval.__file__).resolve().parents[1])
    return {"env_vars": {"PYTHONPATH": os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)}}


def _quiet_ray_data() -> None:
    # convis reports progress itself; Ray Data's progress lines would interleave with it
    from ray.data import DataContext  # ray: optional, only the --ray path pays for importing it

    ctx = DataContext.get_current()
    ctx.enable_progress_bars = False
    ctx.print_on_execution_start = False
    ctx.enable_auto_log_stats = False
    logging.getLogger("ray.data").setLevel(logging.WARNING)


# -- the shard store --------------------------------------------------------------------------------
def _file_key(job: stages.DecodeJob) -> tuple:
    f = job.file
    return f.rel, f.size, f.mtime, segmentation_label(job.segment_seconds, job.shots), job.short_side


class ShardStore:
    """Embedding shards under ``root/<run-id>/``; the ``.json`` sidecars are the manifest."""

    def __init__(self, root: Path):
        self.root = Path(root)
        # named by start time (the manifest reads runs in that order) and unique within it
        self.run_dir = self.root / f"{time.strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:8]}"
        self.written = 0
        self._manifest: dict[tuple, tuple[Path, int, dict]] | None = None

    def find(self, job: stages.DecodeJob, need: dict[str, int]) -> stages.EmbeddedFile | None:
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

    def write(self, items: Sequence[tuple[stages.DecodeJob, stages.EmbeddedFile]], frames: dict[str, int]) -> Path:
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


def _entry(job: stages.DecodeJob, done: stages.EmbeddedFile, per_indexer: dict[str, int]) -> dict:
    # one group per frame spec; only the unit timestamps are read back, so the specs need not be
    frames = [[[np.asarray(f.timestamps).tolist(), list(f.indices)] for f in fs] for fs in done.frames.values()]
    return {
        "key": list(_file_key(job)), "content_hash": done.content_hash, "info": asdict(done.info),
        "spans": [[s.segment, s.start, s.end, s.frames, s.boundary, s.confidence] for s in done.spans],
        "frames": frames,
        "order": list(done.vectors), "vectors": {m: per_indexer[m] for m in done.vectors},
    }


def _span(segment, start, end, frames=None, boundary=None, confidence=None) -> Span:
    """A unit as a shard lists it (older shards: segment, start and end only)."""
    return Span(int(segment), float(start), float(end), tuple(frames) if frames else None, boundary, confidence)


def _from_entry(npz: Path, pos: int, entry: dict, need: dict[str, int]) -> stages.EmbeddedFile:
    with np.load(npz) as data:
        vectors = {m: data[f"{pos}_{entry['order'].index(m)}"] for m in need}
    groups = entry["frames"].values() if isinstance(entry["frames"], dict) else entry["frames"]  # dict: older shards
    frames = {n: [Frames(stages.NO_PIXELS, np.asarray(ts, dtype=np.float64), tuple(ix)) for ts, ix in units]
              for n, units in enumerate(groups)}
    spans = [_span(*fields) for fields in entry["spans"]]
    return stages.EmbeddedFile(VideoInfo(**entry["info"]), entry["content_hash"], spans, frames, vectors)


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

    def __init__(self, timeout: float, isolate: bool):
        self.runner = ProcessDistributor(1, timeout) if isolate else SerialDistributor()
        context = getattr(self.runner, "context", None)
        if context is not None and context.get_start_method() == "forkserver":
            context.set_forkserver_preload([stages.decode_job.__module__])

    def __call__(self, batch: dict) -> dict:
        jobs = [pickle.loads(blob) for blob in batch["job"]]
        results = {job.file.rel: result for job, result in self.runner.map(stages.decode_job, jobs)}
        blobs = [pickle.dumps(_portable(results[job.file.rel])) for job in jobs]
        return {"i": batch["i"], "blob": np.array(blobs, dtype=object)}


def _portable(result: Any) -> Any:
    # the reason text is what the catalog stores; an arbitrary exception may not unpickle elsewhere
    if isinstance(result, BaseException):
        return RemoteFailure(stages.reason_of(result), stages.is_transient(result))
    return result


class _Embedder:
    """A Ray actor holding every visual indexer; embeds one decoded file per call."""

    def __init__(self, specs: list[tuple[str, int]], device: str | None, trust_remote_code: bool, threads: int,
                 protocol: str = "fast"):
        import torch  # torch: imported by the embed actors, which hold the models

        torch.set_num_threads(max(1, threads))
        extra = {"trust_remote_code": True} if trust_remote_code else {}
        self.models: dict[str, Indexer] = {}
        for model_id, frames in specs:
            model = create_indexer(model_id, protocol=protocol, device=device, **extra)
            apply_frames([model], frames)  # the frame count the run's model has, --frames included
            self.models[model_id] = model

    def __call__(self, batch: dict) -> dict:
        blobs = [pickle.dumps(self._embed(pickle.loads(blob))) for blob in batch["blob"]]
        return {"i": batch["i"], "blob": np.array(blobs, dtype=object)}

    def _embed(self, decoded: Any) -> Any:
        return decoded if isinstance(decoded, BaseException) else stages.embed_file(decoded, self.models)


# -- the executor -----------------------------------------------------------------------------------
class RayExecutor:
    """``embed(jobs, models)`` -> (job, EmbeddedFile or failure) in job order: shards first, Ray for the rest.

    Every computed file is written to a shard before it is handed on to the run, and whatever
    was computed is written when the run is interrupted.  The Ray actors build their own models
    from the run's: same ids, same protocol, same frame counts.
    """

    def __init__(self, shards: ShardStore, options: RayOptions):
        self.shards, self.options = shards, options
        self.need: dict[str, int] = {}  # indexer id -> frames per unit, of the run's models
        self.protocol = "fast"
        self.computed = self.reused = 0
        self._flushed = time.monotonic()

    @classmethod
    def in_index(cls, index_dir: str | Path, options: RayOptions) -> RayExecutor:
        """An executor keeping its shards in the index folder."""
        return cls(ShardStore(Path(index_dir) / SHARDS_DIRNAME), options)

    def embed(self, jobs: Sequence[stages.FileJob], models: Sequence[Indexer]
              ) -> Iterator[tuple[stages.FileJob, stages.FileResult]]:
        self.need = {m.model_id: m.frames_per_unit for m in models}
        self.protocol = next((m.protocol for m in models), "fast")  # the index's; the actors build models alike
        jobs = list(jobs)
        ready = self._from_shards(jobs)  # job index -> result, until handed on
        todo = [i for i in range(len(jobs)) if i not in ready]
        pending: list[tuple[int, stages.EmbeddedFile]] = []  # computed, not yet in a shard
        stream = self._stream([jobs[i].decode for i in todo]) if todo else iter(())
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

    @contextmanager
    def describer(self, spec: str, root: Path, protocol: str = "fast"):
        """(the captioner's identity, a mapper) with the captioner in Ray actors, captioning as the index's
        ``protocol`` says: see ``ray_describe``."""
        import ray  # ray: optional, only the --ray path pays for importing it

        started = connect(self.options.address, self.options.runtime_env)
        try:
            with ray_captioner(spec, root, self.options.device, self.options.trust_remote_code,
                               cpus=self.options.embed_cpus, protocol=protocol) as found:
                yield found
        finally:
            if started:
                ray.shutdown()

    def finish(self, report: IndexReport) -> RayIndexReport:
        """All merged: the catalog holds everything the shards did, so they go."""
        self.shards.clear()
        return RayIndexReport(**vars(report), computed=self.computed, reused=self.reused,
                              shards=self.shards.written)

    def _from_shards(self, jobs: list[stages.FileJob]) -> dict[int, Any]:
        found = {i: self.shards.find(job.decode, self.need) for i, job in enumerate(jobs)}
        ready = {i: done for i, done in found.items() if done is not None}
        self.reused = len(ready)
        return ready

    def _arrived(self, i: int, result: Any, jobs, pending: list, ready: dict[int, Any]) -> None:
        self.computed += 1
        if isinstance(result, stages.EmbeddedFile) and result.error is None:
            pending.append((i, result))
        else:
            ready[i] = result  # failures go to the catalog as they are, never to a shard
        o = self.options
        if len(pending) >= o.shard_files or time.monotonic() - self._flushed > o.shard_seconds:
            self._flush(jobs, pending, ready)

    def _flush(self, jobs, pending: list[tuple[int, stages.EmbeddedFile]], ready: dict[int, Any]) -> None:
        if not pending:
            return
        self.shards.write([(jobs[i].decode, done) for i, done in pending], self.need)
        ready.update(pending)
        pending.clear()
        self._flushed = time.monotonic()

    def _stream(self, jobs: list[stages.DecodeJob]) -> Iterator[tuple[int, Any]]:
        """(position in ``jobs``, result) as Ray finishes them."""
        import ray  # ray: optional, only the --ray path pays for importing it

        started = connect(self.options.address, self.options.runtime_env)
        try:
            for batch in self._dataset(jobs).iter_batches(batch_size=None, batch_format="numpy"):
                for k, blob in zip(batch["i"], batch["blob"], strict=False):
                    yield int(k), pickle.loads(blob)
        finally:
            if started:
                ray.shutdown()

    def _dataset(self, jobs: list[stages.DecodeJob]):
        import ray.data  # ray: optional, only the --ray path pays for importing it

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
                            fn_constructor_kwargs={"timeout": o.timeout, "isolate": o.isolate})
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
