"""Frames with structure a resize filter can see: gradients, a checkerboard, hard edges and drawn text.

Flat colours look the same under every filter and crop, so pixel parity tests use these instead.
"""

from __future__ import annotations

import numpy as np
from PIL import Image, ImageDraw

# the source sizes a pixel test should cover: HD, SD 4:3, a small wide clip (width, height)
SOURCE_SIZES: tuple[tuple[int, int], ...] = ((1280, 720), (640, 480), (320, 180))


def textured_frame(i: int, size: tuple[int, int] = (320, 180)) -> np.ndarray:
    """An (H, W, 3) uint8 image that changes with ``i``: diagonal gradients, a checkerboard and text."""
    width, height = size
    y, x = np.mgrid[0:height, 0:width]
    checker = (((x // 7) + (y // 5) + i) % 2) * 90
    image = np.stack([(x * 3 + i * 7) % 256, (y * 5 + i * 11 + checker) % 256,
                      ((x + y) * 2 + i * 13) % 256], -1).astype(np.uint8)
    canvas = Image.fromarray(image)
    draw = ImageDraw.Draw(canvas)
    for row in range(0, height, max(12, height // 6)):
        draw.text((2 + (i * 3) % 11, row), f"frame {i} convis", fill=(255, 255, 255))
    draw.line((0, 0, width - 1, height - 1), fill=(0, 0, 0), width=2)
    return np.asarray(canvas)


def textured_pixels(size: tuple[int, int]):
    """``pixels(i)`` for ``tests.media.make_clip``: textured frames of ``size`` (width, height)."""
    return lambda i: textured_frame(i, size)
