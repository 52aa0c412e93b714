"""Frame arrays in, the one concatenated clip a reranker sees out."""

from __future__ import annotations

import numpy as np

from retrieval.core.sampling import RATED, FrameSpec, rule_indices, uniform_indices


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


def resample(frames: np.ndarray, wanted: int, rule: str = "per-second") -> np.ndarray:
    """Pick (or pad to) ``wanted`` of the given frames with the family's rule.

    Frames handed over as an array have no frame rate, so "per-second" keeps its second,
    uniform step (``int(i*gap + gap/2)``, padded), and a rate rule keeps the frames given (at most
    ``wanted``, uniformly); the other rules apply as they are.
    """
    if len(frames) == wanted or (rule in RATED and len(frames) < wanted):
        return frames  # a fixed rate keeps the count it gave
    if rule in ("per-second", *RATED):
        return frames[uniform_indices(len(frames), wanted)]
    return frames[rule_indices(rule, len(frames), 0.0, wanted)]


def resize_video(frames: np.ndarray, height: int, width: int) -> np.ndarray:
    """Bicubic resize of every frame (PIL, as the reference resizes)."""
    from PIL import Image  # only a pair of differently sized videos needs it

    if frames.shape[1:3] == (height, width):
        return frames
    return np.stack([np.asarray(Image.fromarray(f).resize((width, height), Image.BICUBIC)) for f in frames])


def prepare(frames: np.ndarray, spec: FrameSpec, what: str) -> np.ndarray:
    """Raw frames of any size -> what decoding with ``spec`` gives: the rule's frames at its size."""
    video = resample(as_video(frames, what), spec.count, spec.rule)
    if not spec.sized_at_decode:
        return video
    return np.stack([spec.resize.apply(f) for f in video])


def concat_pair(frames_a: np.ndarray, frames_b: np.ndarray, per_video: int, rule: str = "per-second") -> np.ndarray:
    """Video 1's frames then video 2's, ``per_video`` each: the clip the prompt describes.

    One clip needs one frame size; when the two videos differ, video 2 is resized to video 1's.
    """
    a = resample(as_video(frames_a, "video 1"), per_video, rule)
    b = resample(as_video(frames_b, "video 2"), per_video, rule)
    b = resize_video(b, *a.shape[1:3])
    return np.concatenate([a, b], axis=0)


def padded_count(count: int, multiple: int) -> int:
    """``count`` rounded up to a multiple of ``multiple``: the frames ``pad_to_multiple`` leaves."""
    return count + (-count % max(1, multiple))


def pad_to_multiple(frames: np.ndarray, multiple: int) -> np.ndarray:
    """Repeat the last frame until the count is a multiple of ``multiple`` (a model that merges frames in
    time, e.g. Qwen's pairs, then never merges a frame of one video with a frame of the other)."""
    extra = padded_count(len(frames), multiple) - len(frames)
    return np.concatenate([frames, np.repeat(frames[-1:], extra, axis=0)]) if extra else frames


def join_pair(frames_a: np.ndarray, frames_b: np.ndarray, multiple: int = 1) -> tuple[np.ndarray, int, int]:
    """Video a's frames then video b's, each kept as given (counts may differ) and padded to ``multiple``;
    video b is resized to video a's size. Returns the clip and how many frames of it are each video's."""
    a = pad_to_multiple(as_video(frames_a, "video a"), multiple)
    b = pad_to_multiple(resize_video(as_video(frames_b, "video b"), *as_video(frames_a).shape[1:3]), multiple)
    return np.concatenate([a, b], axis=0), len(a), len(b)


def processor_frame_size(processor) -> tuple[int, int]:
    """(width, height) a checkpoint's video processor resizes every frame to (e.g. 384x384 SigLIP)."""
    size = processor.video_processor.size
    get = size.get if isinstance(size, dict) else (lambda key: getattr(size, key, None))
    height, width = get("height"), get("width")
    if not (height and width):
        edge = get("shortest_edge") or get("longest_edge")
        height = width = edge
    return int(width), int(height)
