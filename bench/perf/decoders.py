"""Decoding as the indexing pipeline does, with one chosen backend (decord or PyAV)."""

from __future__ import annotations

from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Callable

from retrieval.core.sampling import as_spec
from retrieval.media import video_decoder
from retrieval.media.scan import FoundFile
from retrieval.pipeline.stages import DecodeJob


def clip_job(path: Path, frames_per_unit: int, segment_seconds: float | None = None) -> DecodeJob:
    """The decode job the pipeline would make for one clip."""
    stat = path.stat()
    return DecodeJob(FoundFile(str(path), path.name, stat.st_size, stat.st_mtime), (as_spec(frames_per_unit),),
                     segment_seconds)


@contextmanager
def only_decoder(name: str):
    """Within the block, every VideoDecoder built in this process uses one backend.

    The pipeline's ``decode_job`` builds its own decoder with every installed backend, so
    comparing decord with PyAV needs the choice made module-wide (and undone afterwards).
    """
    original = video_decoder._available_backends
    chosen = [factory for factory in original() if factory.name == name]
    if not chosen:
        raise ValueError(f"unknown or unavailable decoder {name!r}")
    video_decoder._available_backends = lambda: chosen
    try:
        yield
    finally:
        video_decoder._available_backends = original


def _decode_with(decoder: str, fn: Callable, job):
    with only_decoder(decoder):
        return fn(job)


class OneDecoder:
    """A distributor wrapper whose workers decode with one backend only."""

    def __init__(self, inner, decoder: str):
        self.inner, self.decoder = inner, decoder

    def map(self, fn, items):
        return self.inner.map(partial(_decode_with, self.decoder, fn), items)
