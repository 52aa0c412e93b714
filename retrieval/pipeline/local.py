"""The local executor: decode in worker processes, embed in this one.

Decoding runs in a distributor (worker processes by default, each with its next task already
queued) while this process embeds the previous one, so decode and model work overlap; the
models get the cores the decode workers leave.  A file is decoded a window of units at a time
(``stages.unit_windows``): its first window says how many it has, the others are queued after
every file's first, and each is embedded as it arrives, so only vectors are held for a long file.
A long file's windows are sized so that every worker gets a share of it: one file uses all of them.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Iterator, Mapping, Sequence

from indexers.base import Indexer
from retrieval.core.defaults import WORKER_MEMORY_MB
from retrieval.media.frames import FileChanged
from retrieval.pipeline.distribute import Distributor, ProcessDistributor
from retrieval.pipeline.guard import check_main_guard
from retrieval.pipeline.run import IndexReport
from retrieval.pipeline.settings import IndexSettings
from retrieval.pipeline.stages import (
    DECODER_MODULES,
    DecodedFile,
    DecodedWindow,
    DecodeJob,
    EmbeddedFile,
    FileJob,
    FileResult,
    decode_job,
    embed_file,
    join_windows,
)


class LocalExecutor:
    """Decodes in ``distributor`` and embeds here, torch using ``threads`` intra-op threads (None: its own
    choice) while models on the CPU share the machine with the decode workers."""

    def __init__(self, distributor: Distributor, threads: int | None = None):
        self.distributor, self.threads = distributor, threads

    def prepare(self) -> list[str]:
        """The run has work: start the decode workers (if they start apart from their first task)."""
        start = getattr(self.distributor, "start", None)
        if start is not None:
            start(DECODER_MODULES)
        return list(getattr(self.distributor, "notes", ()))  # e.g. fewer workers than asked for

    def embed(self, jobs: Sequence[FileJob], models: Sequence[Indexer]) -> Iterator[tuple[FileJob, FileResult]]:
        by_path = {job.file.rel: job for job in jobs}
        by_id = {m.model_id: m for m in models}
        held: dict[str, _Parts] = {}  # a long file's embedded windows, until all are in
        rest: list[DecodeJob] = []
        with cpu_threads(models, self.threads):
            # fewer files than workers: each long one is shared by every worker (with more, they have one each)
            workers = max(1, int(getattr(self.distributor, "workers", 1)))
            parts = workers if len(jobs) < workers else 1
            first = [replace(j.decode, window=0, parts=parts) for j in jobs]
            for decode, decoded in self.distributor.map(decode_job, first):
                job = by_path[decode.file.rel]
                result = _embedded(job, decoded, by_id)
                windows = getattr(decoded, "windows", 1)
                if windows > 1 and _goes_on(job, result):
                    held[job.file.rel] = _Parts(windows, decoded.identity, {0: result})
                    rest += [replace(decode, window=k, cut=decoded.cut) for k in range(1, windows)]
                else:
                    yield job, result
            for decode, decoded in self.distributor.map(decode_job, rest) if rest else ():
                yield from _window_in(by_path[decode.file.rel], decode.window, decoded, by_id, held)
            for rel in list(held):  # a distributor that dropped a window: the file is reported, never lost
                del held[rel]
                yield by_path[rel], RuntimeError("some of the video was never decoded")  # a later run retries

    def finish(self, report: IndexReport) -> IndexReport:
        return report


@dataclass
class _Parts:
    windows: int  # how many the file has, as its first window found
    identity: tuple[int, ...]  # the file as its first window read it (inode, size, times)
    done: dict[int, EmbeddedFile]


def _goes_on(job: FileJob, result: FileResult) -> bool:
    """After its first window: the file's other windows are worth decoding (it neither failed nor is the
    bytes the catalog holds)."""
    return isinstance(result, EmbeddedFile) and result.error is None and not job.unchanged(result.content_hash)


def _window_in(job: FileJob, window: int, decoded: DecodedFile | BaseException, models: Mapping[str, Indexer],
               held: dict[str, _Parts]) -> Iterator[tuple[FileJob, FileResult]]:
    """One later window of a long file: the file is handed on once all are in, or at its first failure
    (what of it is still queued is then dropped)."""
    parts = held.get(job.file.rel)
    if parts is None:
        return  # the file failed in an earlier window
    if isinstance(decoded, DecodedWindow) and (decoded.windows, decoded.identity) != (parts.windows, parts.identity):
        # written since its first window was read: its windows are not of one version of the file
        result = FileChanged("the video changed while it was indexed")
    else:
        result = _embedded(job, decoded, models)
    if not isinstance(result, EmbeddedFile) or result.error is not None:
        del held[job.file.rel]
        yield job, result
        return
    parts.done[window] = result
    if len(parts.done) == parts.windows:
        del held[job.file.rel]
        yield job, join_windows([parts.done[k] for k in sorted(parts.done)])


def _embedded(job: FileJob, decoded: DecodedFile | BaseException, models: Mapping[str, Indexer]) -> FileResult:
    """The embed stage for one decoded file with the models it needs: none for bytes the catalog already
    holds with every vector; a decode failure passes through."""
    if isinstance(decoded, BaseException):
        return decoded
    return embed_file(decoded, {} if job.unchanged(decoded.content_hash) else {m: models[m] for m in job.indexers})


@contextmanager
def decode_workers(settings: IndexSettings) -> Iterator[ProcessDistributor]:
    """Decode worker processes: they start when the run has work (``LocalExecutor.prepare``), not before."""
    check_main_guard()  # a script that would start workers unguarded is stopped before anything is written
    count, note = worker_count(settings.workers)
    workers = ProcessDistributor(count, settings.timeout, keep_warm=True)
    workers.notes = [note] if note else []
    try:
        yield workers
    finally:
        workers.close()


def worker_count(requested: int | None) -> tuple[int, str | None]:
    """Decode workers to start: ``requested`` (default: half the cores) at most one per core and per
    ``WORKER_MEMORY_MB`` of available memory; with a note when that lowered it."""
    cores = os.cpu_count() or 1
    wanted = requested or max(1, cores // 2)
    memory = available_mb()
    by_memory = memory // WORKER_MEMORY_MB if memory is not None else None
    cap = max(1, min(cores, by_memory) if by_memory is not None else cores)
    if wanted <= cap:
        return wanted, None
    return cap, (f"{cap} decode worker(s), not {wanted}: this machine has {cores} core(s) and "
                 f"memory for {by_memory if by_memory is not None else 'any number'} "
                 f"({WORKER_MEMORY_MB} MB each)")


def available_mb() -> int | None:
    """Memory available to new processes, in MB (None: unknown, not Linux)."""
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) // 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def cores_left(distributor: Distributor) -> int | None:
    """Cores the models may use beside local decode workers (None: not local, leave torch's choice)."""
    if not isinstance(distributor, ProcessDistributor):
        return None
    return max(1, (os.cpu_count() or 1) - distributor.workers)


@contextmanager
def cpu_threads(models: Sequence[Indexer], threads: int | None):
    """Within the block, torch uses ``threads`` intra-op threads if every torch model runs on the CPU.

    Decode workers share the cores: a model that also takes every core makes both wait on each
    other (measured on 2 cores: one torch thread beside one decoder indexes ~30% faster than two).
    """
    if not threads:
        yield
        return
    import torch  # torch: only a run that embeds here pays for importing it, and its models have by now

    on_cpu = all(getattr(m, "device", torch.device("cpu")).type == "cpu" for m in models)
    if not on_cpu:
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(max(1, threads))
    try:
        yield
    finally:
        torch.set_num_threads(before)
