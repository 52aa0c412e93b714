"""Synthetic video clips for tests, written with PyAV.

Frame ``i`` is filled with a grey level that encodes ``i``, so a test can tell from
the decoded pixels which frame a decoder returned.
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import av
import numpy as np

LEVEL_STEP = 4  # grey levels between consecutive frames: survives lossy coding


def frame_level(i: int) -> int:
    return (16 + i * LEVEL_STEP) % 240


def make_clip(path: Path, frames: int = 50, fps: int = 10, size: tuple[int, int] = (64, 48),
              codec: str = "libx264", pixels=None) -> Path:
    """Write ``frames`` frames; ``pixels(i)`` may return an (H, W, 3) uint8 image for frame i."""
    width, height = size
    with av.open(str(path), "w") as out:
        stream = out.add_stream(codec, rate=Fraction(fps))
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
        if codec == "libx264":
            stream.options = {"crf": "10", "g": "10"}
        for i in range(frames):
            image = pixels(i) if pixels else np.full((height, width, 3), frame_level(i), np.uint8)
            for packet in stream.encode(av.VideoFrame.from_ndarray(image, format="rgb24")):
                out.mux(packet)
        for packet in stream.encode():
            out.mux(packet)
    return path


def decoded_frame_number(image: np.ndarray) -> int:
    """Inverse of ``frame_level`` for an unwrapped level (frames < 56)."""
    return int(round((float(image.mean()) - 16) / LEVEL_STEP))
