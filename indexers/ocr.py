"""On-screen text: RapidOCR (PP-OCRv4 detection and recognition on ONNX Runtime, weights in its wheel).

A line reader, not an embedding model: it reads each sampled frame and says what text it shows, where and how
sure it is; the run stores the lines (``retrieval.pipeline.frame_lines``) and no vector.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from typing import ClassVar, Sequence

import numpy as np

from indexers.base import Indexer
from indexers.errors import ModelUnavailableError
from retrieval.core.pixels import DecoderScaled
from retrieval.core.sampling import FrameSpec

PACKAGE = "rapidocr-onnxruntime"
# The detector reads a frame at most this many pixels on its long side (PaddleOCR's own default limit): frames
# arrive decoder-scaled to a short side of 720 (long side at most 1024), so a 4K frame is never held full size.
DETECT_LONG_SIDE = 960
READ_LONG_SIDE = 1024  # a frame handed in larger (a 4K still) is scaled down to this first, as the decoder does
OCR_SHORT_SIDE = 720
OCR_RATE = 1.0  # frames a second; each unit's first frame is read too, so with shot units every cut is read
MOST_FRAMES = 600  # a unit longer than 10 minutes is read at a coarser stride (the rate rule's cap)
# boxes the detector hands the recogniser from one frame (its first, by contour): recognising each costs about as
# much as detecting the frame, so a frame of 500 lines costs a bounded time and gives at most this many lines
MOST_LINES = 64
MIN_CONFIDENCE = 0.6  # recogniser confidence below which a line is dropped (noise reads as short, unsure strings)
_WORD = re.compile(r"\w")


@dataclass(frozen=True)
class FrameText:
    """One line read off one frame: its text, the recogniser's confidence, and its box as frame fractions."""

    text: str
    confidence: float
    box: tuple[float, float, float, float]


class OcrReader(Indexer):
    """Reads the text on each sampled frame; ``kind`` "lines": it makes timed lines, not vectors."""

    kind: ClassVar[str] = "lines"
    pooling: ClassVar[str] = "none: text lines per frame, stored with their time and box"
    dim = 0

    def __init__(self, source: str = "rapidocr", device: str | None = None):
        self.name, self.source = "ocr", source
        self.frame_spec = FrameSpec.at_rate(OCR_RATE, MOST_FRAMES, DecoderScaled(OCR_SHORT_SIDE))
        self.cuda = _wants_cuda(device)
        self._engine = _engine(self.cuda)

    @property
    def origin(self) -> str:
        """What made the lines, as stored with each: ``rapidocr:<version>``."""
        return f"rapidocr:{package_version()}"

    @property
    def stamp(self) -> str:
        """What a stored read must match to be current: the package (its weights ship in it) and the reading rules."""
        return f"{self.origin};det{DETECT_LONG_SIDE};short{OCR_SHORT_SIDE};rate{OCR_RATE:g};top{MOST_LINES};" \
               f"min{MIN_CONFIDENCE:g};nocls"

    def read_frame(self, pixels: np.ndarray) -> list[FrameText]:
        """The lines on one (H, W, 3) uint8 RGB frame, in reading order (top to bottom, left to right)."""
        height, width = pixels.shape[:2]
        if height < 2 or width < 2:
            return []
        pixels = _bounded(pixels)
        found, _ = self._engine(np.ascontiguousarray(pixels[..., ::-1]))  # RapidOCR takes OpenCV's BGR
        height, width = pixels.shape[:2]
        lines = [_frame_text(points, text, score, width, height) for points, text, score in found or ()]
        kept = [x for x in lines if x.confidence >= MIN_CONFIDENCE and _WORD.search(x.text)]
        return sorted(kept, key=lambda x: (round(x.box[1], 2), x.box[0]))

    def read_frames(self, frames: Sequence[np.ndarray]) -> list[list[FrameText]]:
        return [self.read_frame(frame) for frame in frames]


def _bounded(pixels: np.ndarray) -> np.ndarray:
    """The frame with its long side at most ``READ_LONG_SIDE`` (boxes are fractions: the scale does not show)."""
    height, width = pixels.shape[:2]
    scale = READ_LONG_SIDE / max(height, width)
    if scale >= 1:
        return pixels
    from PIL import Image

    size = (max(2, round(width * scale)), max(2, round(height * scale)))
    return np.asarray(Image.fromarray(np.ascontiguousarray(pixels)).resize(size, Image.Resampling.BILINEAR))


def _frame_text(points, text: str, score, width: int, height: int) -> FrameText:
    xs, ys = [float(p[0]) for p in points], [float(p[1]) for p in points]
    box = (_fraction(min(xs), width), _fraction(min(ys), height), _fraction(max(xs), width),
           _fraction(max(ys), height))
    return FrameText(" ".join(str(text).split()), float(score), box)


def _fraction(value: float, side: int) -> float:
    return round(min(1.0, max(0.0, value / side)), 4)


def package_version() -> str:
    try:
        return version(PACKAGE)
    except PackageNotFoundError:
        return "unknown"


def _wants_cuda(device: str | None) -> bool:
    """ONNX Runtime's CUDA provider when the run is on a GPU and the installed runtime has it."""
    if device is not None and not str(device).startswith("cuda"):
        return False
    import onnxruntime

    return "CUDAExecutionProvider" in onnxruntime.get_available_providers()


def _engine(cuda: bool):
    try:
        from rapidocr_onnxruntime import RapidOCR
    except ImportError as exc:
        raise ModelUnavailableError(f"the ocr indexer needs {PACKAGE} (pip install {PACKAGE}): {exc}") from exc
    # the detector's limit on the long side (its default scales the short side up to 736: a 4K frame's stays
    # 2160, and a small frame is enlarged); no angle classifier (on-screen text runs level); the providers follow
    # the run's device
    return RapidOCR(det_limit_side_len=DETECT_LONG_SIDE, det_limit_type="max", max_side_len=READ_LONG_SIDE,
                    det_max_candidates=MOST_LINES, use_cls=False, det_use_cuda=cuda, cls_use_cuda=cuda,
                    rec_use_cuda=cuda)


def build_ocr(source: str, protocol: str = "fast", device: str | None = None, **_) -> OcrReader:
    reader = OcrReader(source, device)
    reader.protocol = protocol
    return reader
