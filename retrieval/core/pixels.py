"""At what size frames are decoded: policies that travel with a model's weights.

Two kinds:

* ``DecoderScaled``: the decoder scales while decoding (short side 256 by default). Fast and
  small; what convis's own indexers use by default.
* ``PerFrameResize`` subclasses: each frame is decoded at full size and resized at once with PIL
  (bicubic unless the model's preprocessing says otherwise), the resize the reference (and each
  model's own image processor) applies to full-size frames. Only a few full-size frames exist at a
  time, so a 4K clip never sits in memory whole.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from retrieval.core.errors import ConvisError

DEFAULT_SHORT_SIDE = 256
MAX_LONG_SIDE = 1024  # bounds panoramas and other extreme aspect ratios


class SizeError(ConvisError, ValueError):
    """The picture has no usable size."""

    exit_code, http_status = 2, 400


def scaled_size(width: int, height: int, short_side: int = DEFAULT_SHORT_SIDE) -> tuple[int, int]:
    """(width, height) after scaling the short side to ``short_side`` (never upscaling), even sides."""
    if width <= 0 or height <= 0:
        raise SizeError("video has no picture size")
    scale = min(1.0, short_side / min(width, height), MAX_LONG_SIDE / max(width, height))
    # even sizes keep swscale and chroma subsampling happy
    return max(2, int(round(width * scale / 2)) * 2), max(2, int(round(height * scale / 2)) * 2)


@dataclass(frozen=True)
class DecoderScaled:
    """The decoder scales the short side to ``short_side`` pixels (no upscaling)."""

    short_side: int = DEFAULT_SHORT_SIDE
    in_decoder = True

    def decoder_size(self, width: int, height: int) -> tuple[int, int]:
        return scaled_size(width, height, self.short_side)

    def output_size(self, width: int, height: int) -> tuple[int, int]:
        return self.decoder_size(width, height)

    def describe(self) -> str:
        return f"decoder-scaled, short side {self.short_side} px"


RESAMPLE = {"bicubic": 3, "bilinear": 2, "nearest": 0}  # PIL.Image.Resampling values


class PerFrameResize:
    """Full-size decode, then per frame: PIL resizes (``steps``), then an optional centre crop."""

    in_decoder = False
    crop: int | None = None
    resample: str = "bicubic"

    def steps(self, width: int, height: int) -> list[tuple[int, int]]:
        """Successive (width, height) targets from a full-size frame."""
        raise NotImplementedError

    def output_size(self, width: int, height: int) -> tuple[int, int]:
        last = (self.steps(width, height) or [(width, height)])[-1]
        return (self.crop, self.crop) if self.crop else last

    def apply(self, frame: np.ndarray) -> np.ndarray:
        """One full-size (H, W, 3) uint8 frame -> the model's input size."""
        from PIL import Image

        image = Image.fromarray(np.ascontiguousarray(frame))
        for size in self.steps(image.width, image.height):
            if image.size != size:
                image = image.resize(size, RESAMPLE[self.resample])
        if self.crop:
            image = centre_crop(image, self.crop)
        return np.asarray(image)


def centre_crop(image, size: int):
    """Transformers' ``center_crop``: top/left = (side - size) // 2."""
    left, top = (image.width - size) // 2, (image.height - size) // 2
    return image.crop((left, top, left + size, top + size))


@dataclass(frozen=True)
class ShortSideResize(PerFrameResize):
    """Short side to ``short_side`` (long side ``int(size * long / short)``), then crop: HF processors."""

    short_side: int
    crop: int | None = None
    resample: str = "bicubic"

    def steps(self, width: int, height: int) -> list[tuple[int, int]]:
        short, long = sorted((width, height))
        long = int(self.short_side * long / short)
        return [(self.short_side, long) if width <= height else (long, self.short_side)]

    def describe(self) -> str:
        crop = f", centre crop {self.crop}x{self.crop}" if self.crop else ""
        return f"full-size decode, {self.resample} short side {self.short_side} px{crop}"


@dataclass(frozen=True)
class FixedResize(PerFrameResize):
    """Every frame to ``width`` x ``height`` (aspect ratio not kept), as ``Resize((h, w))``."""

    width: int
    height: int
    resample: str = "bicubic"

    def steps(self, width: int, height: int) -> list[tuple[int, int]]:
        return [(self.width, self.height)]

    def describe(self) -> str:
        return f"full-size decode, {self.resample} to {self.width}x{self.height}"
