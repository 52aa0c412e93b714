"""Frame arrays in, the one concatenated clip a reranker sees out."""

from __future__ import annotations

import numpy as np
from PIL import Image

from retrieval.sampling import uniform_indices


def as_video(frames: np.ndarray, what: str = "video") -> np.ndarray:
    """Check a clip is (T, H, W, 3) RGB with T >= 1; returned as uint8."""
    arr = np.asarray(frames)
    if arr.ndim != 4 or arr.shape[-1] != 3:
        raise ValueError(f"{what}: expected frames shaped (T, H, W, 3), got {arr.shape}")
    if arr.shape[0] == 0:
        raise ValueError(f"{what}: no frames")
    if arr.dtype != np.uint8:
        arr = np.clip(arr, 0, 255).astype(np.uint8)
    return arr


def resample(frames: np.ndarray, wanted: int) -> np.ndarray:
    """Uniformly pick (or pad to) ``wanted`` frames with the reference's index formula."""
    if len(frames) == wanted:
        return frames
    return frames[uniform_indices(len(frames), wanted)]


def resize_video(frames: np.ndarray, height: int, width: int) -> np.ndarray:
    """Bicubic resize of every frame (PIL, as the reference resizes)."""
    if frames.shape[1:3] == (height, width):
        return frames
    return np.stack([np.asarray(Image.fromarray(f).resize((width, height), Image.BICUBIC)) for f in frames])


def concat_pair(frames_a: np.ndarray, frames_b: np.ndarray, per_video: int) -> np.ndarray:
    """Video 1's frames then video 2's, ``per_video`` each: the clip the prompt describes.

    One clip needs one frame size; when the two videos differ, video 2 is resized to video 1's.
    """
    a = resample(as_video(frames_a, "video 1"), per_video)
    b = resample(as_video(frames_b, "video 2"), per_video)
    b = resize_video(b, *a.shape[1:3])
    return np.concatenate([a, b], axis=0)
