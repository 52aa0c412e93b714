"""Qwen2.5-VL (and Qwen2-VL) as ConViS rerankers.

As the reference (``encode_concat_video_Qwen`` + ``models/qwen2_vl_model.py``): 8 frames a video
(1 a second, then uniform), each decoded at full size, resized (bicubic) to the reference's pixel
budget from its own size and snapped to the patch grid the way qwen-vl-utils does; video 2 is then
brought to video 1's size (the processor sizes a frame list by its first frame); the 16 frames go
in as one video, clocked at 2 fps, the rate the reference's processor assumed for frame lists (it
sets the temporal position spacing).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from rerankers.hf import HFVideoReranker, Release, register_checkpoints
from rerankers.paper_captions import CHAT_TOKENS, CHECKPOINT, CaptionRule
from retrieval.core.pixels import PerFrameResize
from retrieval.core.sampling import QWEN_FPS, FrameSpec

# encode_concat_video_Qwen's constants
_IMAGE_FACTOR = 28
_VIDEO_MIN_PIXELS = 128 * 28 * 28
_VIDEO_MAX_PIXELS = 768 * 28 * 28
_VIDEO_TOTAL_PIXELS = 640 * 360 * 28 * 28
_FRAME_FACTOR = 2
# qwen-vl-utils' per-image bounds when it snaps a frame of a frame list
_SNAP_MIN_PIXELS = 4 * 28 * 28
_SNAP_MAX_PIXELS = 16384 * 28 * 28


def reference_target_size(height: int, width: int, n_frames: int) -> tuple[int, int]:
    """The reference's ``approximate_smart_resize`` target, as (height, width)."""
    max_pixels = max(
        min(_VIDEO_MAX_PIXELS, _VIDEO_TOTAL_PIXELS / n_frames * _FRAME_FACTOR), int(_VIDEO_MIN_PIXELS * 1.05)
    )
    # height * width // 28 (not // 28**2) is the reference's formula, kept as is
    target = max(_VIDEO_MIN_PIXELS, min(max_pixels, height * width // _IMAGE_FACTOR))
    aspect = width / height
    new_height = int((target / aspect) ** 0.5)
    return new_height, int(new_height * aspect)


def snap_to_grid(height: int, width: int, factor: int) -> tuple[int, int]:
    """qwen-vl-utils ``smart_resize``: sides multiples of ``factor``, area within its per-image bounds."""
    return smart_resize(height, width, factor, _SNAP_MIN_PIXELS, _SNAP_MAX_PIXELS)


def smart_resize(height: int, width: int, factor: int, min_pixels: int, max_pixels: int) -> tuple[int, int]:
    """qwen-vl-utils ``smart_resize``: sides multiples of ``factor``, area within [min_pixels, max_pixels]."""
    h_bar = max(factor, round(height / factor) * factor)
    w_bar = max(factor, round(width / factor) * factor)
    if h_bar * w_bar > max_pixels:
        beta = math.sqrt((height * width) / max_pixels)
        h_bar = max(factor, math.floor(height / beta / factor) * factor)
        w_bar = max(factor, math.floor(width / beta / factor) * factor)
    elif h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h_bar = math.ceil(height * beta / factor) * factor
        w_bar = math.ceil(width * beta / factor) * factor
    return h_bar, w_bar


@dataclass(frozen=True)
class QwenPixelBudget(PerFrameResize):
    """The reference's per-video resize: its pixel budget for ``frames`` frames, then the grid snap."""

    frames: int
    factor: int = _IMAGE_FACTOR

    def steps(self, width: int, height: int) -> list[tuple[int, int]]:
        target_h, target_w = reference_target_size(height, width, self.frames)
        snapped_h, snapped_w = snap_to_grid(target_h, target_w, self.factor)
        return [(target_w, target_h), (snapped_w, snapped_h)]

    def describe(self) -> str:
        return (f"full-size decode, bicubic to the reference's pixel budget for {self.frames} frames, "
                f"snapped to {self.factor} px")


# the reference's Qwen captions: qwen-vl-utils 0.0.10 reading the video file ({"fps": 1.0, "max_pixels": 360*420})
_CAPTION_FPS = 1.0
_CAPTION_MAX_PIXELS = 360 * 420
_FPS_MAX_FRAMES = 768  # qwen-vl-utils' most frames at a rate
_FILE_TOTAL_PIXELS = int(128000 * 28 * 28 * 0.9)  # its VIDEO_TOTAL_PIXELS (the VIDEO_MAX_PIXELS variable unset)


def file_max_pixels(n_frames: int, asked: int = _CAPTION_MAX_PIXELS) -> int:
    """qwen-vl-utils ``fetch_video``'s area cap for a file read as ``n_frames`` frames, ``asked`` its max_pixels."""
    budget = max(min(_VIDEO_MAX_PIXELS, _FILE_TOTAL_PIXELS / n_frames * _FRAME_FACTOR), int(_VIDEO_MIN_PIXELS * 1.05))
    return int(min(asked, budget))


@dataclass(frozen=True)
class QwenFilePixels(PerFrameResize):
    """qwen-vl-utils' resize of a video file's frames: ``smart_resize`` into [128*28*28, ``max_pixels``] on the
    ``factor`` grid, then torchvision's bicubic with antialiasing on the uint8 frame (not PIL's)."""

    max_pixels: int
    factor: int = _IMAGE_FACTOR

    def steps(self, width: int, height: int) -> list[tuple[int, int]]:
        new_h, new_w = smart_resize(height, width, self.factor, _VIDEO_MIN_PIXELS, self.max_pixels)
        return [(new_w, new_h)]

    def apply(self, frame: np.ndarray) -> np.ndarray:
        import torch
        from torchvision.transforms import InterpolationMode
        from torchvision.transforms import functional as tvf

        ((width, height),) = self.steps(frame.shape[1], frame.shape[0])
        image = torch.from_numpy(np.ascontiguousarray(frame)).permute(2, 0, 1)
        resized = tvf.resize(image, [height, width], interpolation=InterpolationMode.BICUBIC, antialias=True)
        return np.ascontiguousarray(resized.permute(1, 2, 0).numpy())

    def describe(self) -> str:
        return (f"full-size decode, torchvision bicubic (antialiased) to at most {self.max_pixels} px "
                f"on the {self.factor}-px grid")


class QwenReranker(HFVideoReranker):
    layout = "qwen"
    model_classes = {
        "qwen2_5_vl": "Qwen2_5_VLForConditionalGeneration",
        "qwen2_vl": "Qwen2VLForConditionalGeneration",
    }
    frames_per_video = 8
    frame_multiple = 2  # the vision tower merges frames in pairs (temporal_patch_size 2)
    video_fps = 2.0
    fp16_safe = False  # Qwen2.5-VL's activations overflow in fp16
    size_text = ("full-size decode, bicubic to the reference's pixel budget (area clamp(h*w // 28, 128*28*28, "
                 "768*28*28)), snapped to the 28-px grid; video 2 then resized to video 1's size")
    dtype_text = "bf16 on GPUs that have it, else fp32 (fp16 overflows); fp32 on CPU"
    paper_dtype = "bf16"  # the reference's from_pretrained(torch_dtype=torch.bfloat16)
    paper_dtype_source = "as the reference loaded it"
    caption_text: ClassVar[str] = (
        "fast: its 8 reranking frames at the reranking pixel budget, greedy, 256 new tokens, batched; paper: the "
        "reference's (qwen-vl-utils 0.0.10 at fps 1.0: up to 768 frames, linspace(0, n-1, k) rounded; each frame at "
        "most 360*420 px, torchvision bicubic), the checkpoint's own generation config (seeded 42 where it samples), "
        "1024 new tokens, one video at a time")

    def frame_resize(self) -> QwenPixelBudget:
        vp = self.processor.video_processor
        return QwenPixelBudget(self.frames_per_video, vp.patch_size * vp.merge_size)

    def paper_caption_rule(self) -> CaptionRule:
        """The reference's Qwen captions: the file read at 1 fps within 360*420 px a frame, decoded with the
        checkpoint's own generation config, up to 1024 new tokens (rerankers.paper_captions)."""
        frames = FrameSpec(QWEN_FPS, _FPS_MAX_FRAMES, QwenFilePixels(file_max_pixels(_FPS_MAX_FRAMES)),
                           rate=_CAPTION_FPS)
        return CaptionRule(frames, CHAT_TOKENS, CHECKPOINT)

    def _video_inputs(self, clips: list[np.ndarray]) -> tuple[list[np.ndarray], dict]:
        metadata = [
            {"total_num_frames": len(v), "fps": self.video_fps, "frames_indices": list(range(len(v)))}
            for v in clips
        ]
        # frames are already at their final, grid-aligned size: the processor must not resize them
        kwargs = {"do_sample_frames": False, "do_resize": False, "video_metadata": metadata}
        if hasattr(self.processor.video_processor, "cap_pixels_per_frame"):
            kwargs["cap_pixels_per_frame"] = False  # a resize option; says so explicitly to keep logs quiet
        return clips, kwargs


CHECKPOINTS = [
    Release("qwen2.5-vl", "Qwen/Qwen2.5-VL-7B-Instruct", aliases=("qwen2.5-vl-7b",),
            claims=("qwen2.5-vl", "qwen2_5_vl"), params=8.3),
    Release("qwen2.5-vl-3b", "Qwen/Qwen2.5-VL-3B-Instruct", params=3.8),
    # not in the paper; same protocol (the "qwen2_5_vl" type does not contain "qwen2_vl")
    Release("qwen2-vl", "Qwen/Qwen2-VL-7B-Instruct", aliases=("qwen2-vl-7b",), claims=("qwen2-vl", "qwen2_vl"),
            params=8.3),
]
register_checkpoints(QwenReranker, CHECKPOINTS,
                     description="Qwen2.5-VL / Qwen2-VL, 8 frames a video, concept prompt as the system message")
