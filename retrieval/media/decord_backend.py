"""The decord backend: decord's reader, one thread, on the CPU."""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Sequence

import numpy as np

from retrieval.media.frames import DecodeError, Frames, VideoInfo, reorder


@contextmanager
def _native_stderr_muted():
    """decord's C++ layer logs "ERROR opening ..." to stderr, then raises the same error, which the caller reports
    as one line; muted at the file descriptor, for the moment of opening (another thread's line then is lost)."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 2)
            yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


class DecordBackend:
    name = "decord"

    def __init__(self) -> None:
        import decord  # fail early so the caller can fall back

        # corrupt-slice chatter from libavcodec is not actionable; real failures raise
        decord.logging.set_level(decord.logging.QUIET)

    def _open(self, path: Path, size: tuple[int, int] | None = None):
        import decord

        # num_threads=1: decord's threaded decoding corrupts VP9 frames (dmlc/decord#246)
        kwargs = {"width": size[0], "height": size[1]} if size else {}
        with _native_stderr_muted():
            return decord.VideoReader(str(path), ctx=decord.cpu(0), num_threads=1, **kwargs)

    def probe(self, path: Path) -> VideoInfo:
        reader = self._open(path)
        with _native_stderr_muted():  # the first frame's seek logs "Failed to seek file to position: 0", then raises
            height, width = reader[0].shape[:2] if len(reader) else (0, 0)
        count, fps = len(reader), float(reader.get_avg_fps())
        if count <= 0:
            raise DecodeError("video stream has no frames")
        duration = float(reader.get_frame_timestamp(count - 1)[1]) if count else 0.0
        return VideoInfo(count, fps, duration, int(width), int(height), self.name)

    def read(self, path: Path, info: VideoInfo, indices: Sequence[int], resize) -> Frames:
        unique = sorted(set(indices))
        if resize.in_decoder:
            reader = self._open(path, resize.decoder_size(info.width, info.height))
            batch = reader.get_batch(unique).asnumpy()
        else:  # full size, one frame at a time, each resized as soon as it is decoded
            reader = self._open(path)
            # one by one: decord's batches of full-size frames cost far more memory than the frames
            batch = np.stack([resize.apply(reader[i].asnumpy()) for i in unique])
        times = reader.get_frame_timestamp(unique)[:, 0]
        return reorder(unique, batch, np.asarray(times, dtype=np.float64), indices)
