"""The local executor: decode in worker processes, embed in this one.

Decoding runs in a distributor (worker processes by default, each with its next file already
queued) while this process embeds the previous file, so decode and model work overlap; the
models get the cores the decode workers leave.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from typing import Iterator, Mapping, Sequence

from indexers.base import Indexer
from retrieval.pipeline.distribute import Distributor, ProcessDistributor
from retrieval.pipeline.indexing import (
    DECODER_MODULES,
    DecodedFile,
    FileJob,
    FileResult,
    IndexReport,
    decode_job,
    embed_file,
)
from retrieval.pipeline.settings import IndexSettings


class LocalExecutor:
    """Decodes in ``distributor`` and embeds here, torch using ``threads`` intra-op threads (None: its own
    choice) while models on the CPU share the machine with the decode workers."""

    def __init__(self, distributor: Distributor, threads: int | None = None):
        self.distributor, self.threads = distributor, threads

    def embed(self, jobs: Sequence[FileJob], models: Sequence[Indexer]) -> Iterator[tuple[FileJob, FileResult]]:
        by_path = {job.file.rel: job for job in jobs}
        by_id = {m.model_id: m for m in models}
        with cpu_threads(models, self.threads):
            for decode, decoded in self.distributor.map(decode_job, [job.decode for job in jobs]):
                job = by_path[decode.file.rel]
                yield job, _embedded(job, decoded, by_id)

    def finish(self, report: IndexReport) -> IndexReport:
        return report


def _embedded(job: FileJob, decoded: DecodedFile | BaseException, models: Mapping[str, Indexer]) -> FileResult:
    """The embed stage for one decoded file with the models it needs: none for bytes the catalog already
    holds with every vector; a decode failure passes through."""
    if isinstance(decoded, BaseException):
        return decoded
    return embed_file(decoded, {} if job.unchanged(decoded.content_hash) else {m: models[m] for m in job.indexers})


@contextmanager
def decode_workers(settings: IndexSettings) -> Iterator[ProcessDistributor]:
    """Decode worker processes, started now so that their start-up overlaps loading the models."""
    workers = ProcessDistributor(settings.workers or max(1, (os.cpu_count() or 2) // 2), settings.timeout)
    workers.start(DECODER_MODULES)
    try:
        yield workers
    finally:
        workers.close()


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
