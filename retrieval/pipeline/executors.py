"""The executor a run's settings ask for: Ray when they name a cluster, else decode workers on this machine."""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from retrieval.pipeline.distribute import Distributor
from retrieval.pipeline.local import LocalExecutor, cores_left, decode_workers
from retrieval.pipeline.ray_pipeline import RayExecutor, RayOptions
from retrieval.pipeline.run import Executor
from retrieval.pipeline.settings import IndexSettings


@contextmanager
def open_executor(settings: IndexSettings, index_dir: Path, distributor: Distributor | None = None,
                  device: str | None = None, trust_remote_code: bool = False) -> Iterator[Executor]:
    """Enter before loading the models: local decode workers start now, so their start-up overlaps it,
    and stop on leaving.  ``distributor`` decodes instead of them (Ray runs ignore it); ``device`` and
    ``trust_remote_code`` are how the Ray actors build their models."""
    if settings.ray_address is not None:
        options = RayOptions(address=settings.ray_address, device=device, trust_remote_code=trust_remote_code,
                             timeout=settings.timeout)
        yield RayExecutor.in_index(index_dir, options)
    elif distributor is not None:
        yield LocalExecutor(distributor, cores_left(distributor))
    else:
        with decode_workers(settings) as workers:
            yield LocalExecutor(workers, cores_left(workers))
