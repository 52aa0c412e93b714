"""Task functions for distributor tests (module level, so worker processes can import them)."""

import os
import signal
import tempfile
import time
from dataclasses import dataclass

from retrieval.media.frames import DecodeError
from retrieval.media.video_decoder import VideoDecoder


def behave(item):
    """`("ok", x)` returns x; `("hang", s)` sleeps s seconds; `("crash", _)` dies like a segfaulting decoder."""
    kind, value = item
    if kind == "hang":
        time.sleep(value)
    if kind == "crash":
        os.kill(os.getpid(), signal.SIGSEGV)
    if kind == "raise":
        raise ValueError(value)
    return value


def stamped(item):
    """`(folder, name, seconds)`: write when this task started into folder/name, then work for seconds."""
    folder, name, seconds = item
    with open(os.path.join(folder, name), "w") as fh:
        fh.write(repr(time.time()))
    time.sleep(seconds)
    return name


def decode_bytes(data: bytes):
    """Decode a video given as bytes (written to a temp file): shape of the frames, or the DecodeError text."""
    with tempfile.NamedTemporaryFile(suffix=".mp4") as fh:
        fh.write(data)
        fh.flush()
        try:
            _, units = VideoDecoder().sample(fh.name, 4)
        except DecodeError as exc:
            return f"error: {exc}"
    return [u.pixels.shape for _, u in units]


def worker_pid(_item):
    """The process that ran the task."""
    return os.getpid()


@dataclass(frozen=True)
class Costly:
    """A task that says how many time limits it may take (as a shot-detection decode does)."""

    seconds: float
    timeout_factor: float = 1.0


def sleep_for(item: Costly):
    time.sleep(item.seconds)
    return item.seconds
