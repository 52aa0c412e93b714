"""Thumbnails: a clip's frames over a span as small JPEGs (the web UI's strips, the pages' figures, evidence)."""

from __future__ import annotations

import base64
import io
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from retrieval.api import VideoDecoder

# Thumbnails are decoded at this short side: sharp enough to recognise a scene, small enough
# that a 10-result page with 8 frames each stays around a megabyte.
THUMB_SHORT_SIDE = 112
JPEG_QUALITY = 80


@dataclass(frozen=True)
class Thumb:
    time: float  # seconds into the video
    jpeg: bytes
    width: int
    height: int


def strip(path: str | Path, start: float = 0.0, end: float | None = None, frames: int = 8,
          decoder: VideoDecoder | None = None) -> list[Thumb]:
    """Up to ``frames`` JPEG thumbnails spread over ``[start, end]`` of one video.

    The sampler pads short spans by repeating the last frame; repeats are dropped here
    because a strip of identical pictures tells the viewer nothing.
    """
    decoder = decoder or VideoDecoder(short_side=THUMB_SHORT_SIDE)
    sampled = decoder.sample_span(path, frames, start, end)
    seen: set[int] = set()
    thumbs = []
    for pixels, time, index in zip(sampled.pixels, sampled.timestamps, sampled.indices, strict=False):
        if index not in seen:
            seen.add(index)
            thumbs.append(Thumb(float(time), to_jpeg(pixels), pixels.shape[1], pixels.shape[0]))
    return thumbs


def to_jpeg(pixels: np.ndarray, quality: int = JPEG_QUALITY) -> bytes:
    from PIL import Image  # PIL: only pages and strips with thumbnails pay for importing it

    buffer = io.BytesIO()
    Image.fromarray(np.ascontiguousarray(pixels)).save(buffer, "JPEG", quality=quality, optimize=True)
    return buffer.getvalue()


def data_uri(jpeg: bytes) -> str:
    return "data:image/jpeg;base64," + base64.b64encode(jpeg).decode("ascii")
