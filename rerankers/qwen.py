"""Qwen2.5-VL (and Qwen2-VL) as ConViS rerankers.

As the reference (``encode_concat_video_Qwen`` + ``models/qwen2_vl_model.py``): 8 frames a video
(1 a second, then uniform), each decoded at full size, resized (bicubic) to the reference's pixel
budget from its own size and snapped to the patch grid the way qwen-vl-utils does; video 2 is then
brought to video 1's size (the processor sizes a frame list by its first frame); the 16 frames go
in as one video, clocked at 2 fps, the rate the reference's processor assumed for frame lists (it
sets the temporal position spacing).
"""

from __future__ import annotations

import inspect
import math
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from rerankers.base import NextToken
from rerankers.hf import HFVideoReranker, Release, register_checkpoints
from rerankers.paper_captions import CHAT_TOKENS, CHECKPOINT, CaptionRule
from rerankers.sharing import cache_argument, expanded_cache, returned_cache
from rerankers.unit_prefix import Prefix
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


def torchvision_bicubic(frame: np.ndarray, height: int, width: int, functional) -> np.ndarray:
    """A uint8 (H, W, 3) frame resized by ``functional.resize`` (torchvision's v1 or v2 functional API: on uint8
    their antialiased bicubics round differently), bicubic with antialiasing."""
    import torch
    from torchvision.transforms import InterpolationMode

    image = torch.from_numpy(np.ascontiguousarray(frame)).permute(2, 0, 1)
    resized = functional.resize(image, [height, width], interpolation=InterpolationMode.BICUBIC, antialias=True)
    return np.ascontiguousarray(resized.permute(1, 2, 0).numpy())


@dataclass(frozen=True)
class QwenFilePixels(PerFrameResize):
    """qwen-vl-utils' resize of a video file's frames: ``smart_resize`` into [128*28*28, ``max_pixels``] on the
    ``factor`` grid, then torchvision's bicubic with antialiasing on the uint8 frame (not PIL's)."""

    max_pixels: int
    factor: int = _IMAGE_FACTOR
    min_pixels: int = _VIDEO_MIN_PIXELS

    def steps(self, width: int, height: int) -> list[tuple[int, int]]:
        new_h, new_w = smart_resize(height, width, self.factor, self.min_pixels, self.max_pixels)
        return [(new_w, new_h)]

    def apply(self, frame: np.ndarray) -> np.ndarray:
        from torchvision.transforms import functional as tvf  # qwen-vl-utils' resize (torchvision's v1 API)

        ((width, height),) = self.steps(frame.shape[1], frame.shape[0])
        return torchvision_bicubic(frame, height, width, tvf)

    def describe(self) -> str:
        return (f"full-size decode, torchvision bicubic (antialiased) to at most {self.max_pixels} px "
                f"on the {self.factor}-px grid")


@dataclass(frozen=True)
class PairLayout:
    """The tokens of one pair clip, the same for every candidate of an anchor (video 2 has video 1's size and frame
    count): their ids, their M-RoPE positions (3, 1, length) as the model computes them for the whole clip, where
    the video's tokens are, and where video 1's end (the shared prefix is every token before that)."""

    input_ids: Any  # (1, length)
    positions: Any  # (3, 1, length)
    video_start: int
    video_stop: int
    prefix: int  # one past video 1's last video token (timestamps between frames, where a family has them, count)


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

    # -- pairs of one anchor: its vision output and the prompt up to its last frame computed once -------------------
    def _shared_tokens(self, anchor: np.ndarray, candidates: list[np.ndarray], concept_words: str
                       ) -> list[NextToken] | None:
        """The vision tower attends within each temporal patch (``temporal_patch_size`` frames) and places every
        patch by its own (h, w) grid, so a pair clip's vision output is video 1's followed by video 2's whenever no
        patch holds a frame of each: then video 1 is encoded alone, once, and the prompt up to its last token is
        run once for every candidate. An odd frame count (with patches of 2) merges the two videos: not shared."""
        patch = int(self.processor.video_processor.temporal_patch_size)
        if len(anchor) % patch or len({len(c) for c in candidates}) != 1:
            return None
        layout = self._pair_layout(anchor, candidates[0], self.render_prompt(concept_words))
        if layout is None:
            return None
        prefix = self._prefix_cache(layout, anchor)
        return self._fitted(lambda batch: self._suffix_tokens(layout, prefix, batch), candidates)

    def _pair_layout(self, anchor: np.ndarray, candidate: np.ndarray, prompt: str) -> PairLayout | None:
        """The processor's tokens for the first pair (every candidate's are the same) and the model's own M-RoPE
        positions for them; None where the model has no ``get_rope_index`` this code can call."""
        inputs = self._prompt_inputs(prompt, np.concatenate([anchor, candidate]))
        positions = self._rope_positions(inputs)
        if positions is None:
            return None
        ids = inputs["input_ids"]
        where = (ids[0] == self.model.config.video_token_id).nonzero().flatten().tolist()
        half = self._vision([anchor])[0].shape[0]  # video 1's tokens: its vision output, one token a row
        return PairLayout(ids, positions, where[0], where[-1] + 1, where[half - 1] + 1)

    def _prompt_inputs(self, prompt: str, clip: np.ndarray) -> dict:
        """The processor's tokens for ``prompt`` around one clip, on the device (the pixels left out: the vision
        tower's input comes from ``_encoded``)."""
        videos, video_kwargs = self._video_inputs([clip])
        inputs = self.processor(text=[prompt], videos=videos, return_tensors="pt", **video_kwargs)
        return self._to_device({k: v for k, v in inputs.items() if not k.startswith("pixel_values")})

    def _rope_positions(self, inputs: dict):
        """The model's own M-RoPE positions (3, rows, length) for the processor's ``inputs``; None where the model
        has no ``get_rope_index`` this code can call."""
        import torch

        rope_index = getattr(self.model.model, "get_rope_index", None)
        if rope_index is None:
            return None
        ids = inputs["input_ids"]
        asked = {**inputs, "attention_mask": torch.ones_like(ids)}
        accepted = inspect.signature(rope_index).parameters
        positions, _ = rope_index(ids, **{k: v for k, v in asked.items() if k in accepted and k != "input_ids"})
        return positions

    # -- a unit's questions after one pass over its video (rerankers.unit_prefix) ----------------------------------
    video_end: ClassVar[str] = "<|vision_end|>"  # the special token that closes a video in the prompt

    def _split_request(self, request: str) -> tuple[str, str] | None:
        text = self.render_request(request)
        cut = text.rfind(self.video_end)
        return None if cut < 0 else (text[:cut + len(self.video_end)], text[cut + len(self.video_end):])

    def _unit_prefix(self, clip: np.ndarray, head: str) -> Prefix | None:
        """``head`` (a describe prompt up to its video's end) around ``clip``: its ids and M-RoPE positions."""
        inputs = self._prompt_inputs(head, clip)
        positions = self._rope_positions(inputs)
        return None if positions is None else Prefix(inputs["input_ids"][0], positions[:, 0])

    def _prefix_forward(self, ids, clips: list[np.ndarray], positions, mask):
        """One pass over prefixes (a row a clip), each clip's vision output computed once (``_encoded``)."""
        return self._video_forward(ids, clips, positions, mask, use_cache=True)

    def _vision(self, videos: list[np.ndarray]) -> list[Any]:
        """Each video's vision-tower output (its tokens, one a row)."""
        return self._encoded(videos)

    def _encoded(self, videos: list[np.ndarray]) -> list[Any]:
        """Each video's kept vision-tower output, kept by the frames' identity: a video already encoded (the
        anchor, a candidate asked under another concept) is not encoded again."""
        import torch

        cache = self._shared_cache("qwen-vision")
        missing = [v for v in videos if cache.peek(v, self.dtype) is None]
        if missing:
            frames, video_kwargs = self._video_inputs(missing)
            inputs = self._to_device(self.processor.video_processor(videos=frames, return_tensors="pt",
                                                                    **video_kwargs))
            with torch.inference_mode():
                out = self.model.get_video_features(inputs["pixel_values_videos"], inputs["video_grid_thw"])
            self.work["vision_calls"] += len(missing)
            for video, value in zip(missing, self._per_video(out), strict=True):
                cache.get(video, self.dtype, lambda e=value: e)
        return [cache.peek(v, self.dtype) for v in videos]

    def _per_video(self, out) -> list[Any]:
        """What is kept of one ``get_video_features`` call, a value per video."""
        return list(getattr(out, "pooler_output", out))  # a tuple of per-video outputs in either transformers

    def _prefix_cache(self, layout: PairLayout, anchor: np.ndarray):
        """One forward pass over the prefix (system prompt, request, vision start, video 1's tokens) at the pair
        clip's positions; its key/value cache."""
        import torch

        stop = layout.prefix
        ids = layout.input_ids[:, :stop]
        out = self._video_forward(ids, [anchor], layout.positions[:, :, :stop], torch.ones_like(ids), use_cache=True)
        self.work["prefix_passes"] += 1
        return returned_cache(out)

    def _suffix_tokens(self, layout: PairLayout, prefix, candidates: list[np.ndarray]) -> list[NextToken]:
        """One forward pass over the rest of the clip (video 2's tokens, vision end, the assistant turn) for every
        candidate, after the prefix's cache; the answer read at the last position."""
        import torch

        rows, stop = len(candidates), layout.prefix
        ids = layout.input_ids.expand(rows, -1)
        mask = torch.ones_like(ids)  # the prefix's positions and the rest
        out = self._video_forward(ids[:, stop:], candidates, layout.positions[:, :, stop:].expand(-1, rows, -1), mask,
                                  use_cache=True, **{cache_argument(self.model): expanded_cache(prefix, rows)})
        answers = self._answers(out.logits[:, -1], ids, mask)
        self.work["pair_passes"] += rows
        return answers

    def _video_forward(self, ids, videos: list[np.ndarray], positions, mask, **kwargs):
        """A forward pass over ``ids`` (one row per video) whose video tokens take each video's kept vision output,
        at the given positions, ``mask`` covering any cached tokens too; the last position's logits only."""
        import torch

        with torch.inference_mode():
            embeds = self.model.get_input_embeddings()(ids).clone()
            where = ids == self.model.config.video_token_id
            embeds[where] = torch.cat(self._vision(videos)).to(embeds.dtype)  # row after row, as the ids hold them
            return self.model(inputs_embeds=embeds, position_ids=positions, attention_mask=mask, logits_to_keep=1,
                              **kwargs)

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
