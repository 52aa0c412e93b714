"""Qwen3-VL as a ConViS reranker, captioner and describer: the Qwen2.5-VL roles with Qwen3-VL's own frame rule.

Not in the paper; the pair is asked as the paper asks Qwen2.5-VL (its prompt, 8 frames a video, the two videos as
one clip, both scoring modes). What differs comes from transformers' ``Qwen3VLVideoProcessor`` and
``Qwen3VLProcessor`` (models/qwen3_vl/video_processing_qwen3_vl.py, processing_qwen3_vl.py) and the Qwen3-VL
README (github.com/QwenLM/Qwen3-VL, "Video inference": qwen-vl-utils hands the processor frames with their
metadata and ``do_resize=False``):

* pixels: patches of 16, merged 2x2 (a 32-px grid), frames paired in time (temporal patch 2); the clip is sized
  by the processor's ``smart_resize`` over all its frames (area within the checkpoint's ``size`` bounds, per frame
  capped at ``max_video_tokens`` tokens as qwen-vl-utils caps it), then resized as the processor resizes
  (torchvision's v2 bicubic, antialiased: on uint8 it rounds differently from the v1 call qwen-vl-utils makes), so
  the processor, handed the full-size clip with ``cap_pixels_per_frame=True``, gives the same pixels;
* timestamps: the processor writes ``<t seconds>`` before each temporal patch's tokens, t the mean time of its two
  frames, from the metadata's frame indices and fps. The frames come 1 a second (the per-second rule), so the clip
  is described at 1 fps: video 1's patches at 0.5 s, 2.5 s, ..., video 2's after them;
* positions: M-RoPE with each temporal patch placed as an image of its own (time told by the timestamps), and
  deepstack: intermediate vision layers added to the first language layers at the video tokens.

The anchor-once sharing of ``rerankers.qwen`` holds: the vision tower attends within a temporal patch, so video 1
is encoded alone once and the prompt up to its last video token is run once; its deepstack features travel with
its tokens (``mm_encoder_outputs``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from rerankers.hf import HFVideoReranker, Release, register_checkpoints
from rerankers.qwen import QwenFilePixels, QwenReranker, torchvision_bicubic


@dataclass(frozen=True)
class Qwen3ClipPixels(QwenFilePixels):
    """``Qwen3VLVideoProcessor.resize`` for a clip of ``frames`` frames: ``smart_resize`` on the ``factor`` grid
    with the whole clip's area within [``min_pixels``, the capped ``max_pixels``], torchvision bicubic."""

    min_pixels: int = 0
    frames: int = 16
    temporal: int = 2

    def steps(self, width: int, height: int) -> list[tuple[int, int]]:
        from transformers.models.qwen3_vl.video_processing_qwen3_vl import smart_resize

        new_h, new_w = smart_resize(self.frames, height, width, temporal_factor=self.temporal, factor=self.factor,
                                    min_pixels=self.min_pixels, max_pixels=self.max_pixels)
        return [(new_w, new_h)]

    def apply(self, frame: np.ndarray) -> np.ndarray:
        from torchvision.transforms.v2 import functional as tvf  # the video processor's resize (TorchvisionBackend)

        ((width, height),) = self.steps(frame.shape[1], frame.shape[0])
        return torchvision_bicubic(frame, height, width, tvf)

    def describe(self) -> str:
        return (f"full-size decode, the video processor's resize (torchvision v2 bicubic, antialiased) to its "
                f"smart_resize of a {self.frames}-frame clip ({self.min_pixels}..{self.max_pixels} px in all, "
                f"{self.factor}-px grid)")


def clip_pixel_bounds(video_processor, frames: int) -> tuple[int, int]:
    """(min, max) pixels of a whole clip of ``frames`` frames, as ``Qwen3VLVideoProcessor.resize`` bounds it with
    its per-frame cap (qwen-vl-utils' ``VIDEO_MAX_TOKEN_NUM`` tokens a frame, at least 1.05 x the minimum)."""
    size = video_processor.size
    low, high = int(size.shortest_edge), int(size.longest_edge)
    factor = video_processor.patch_size * video_processor.merge_size
    per_frame = max(min(int(video_processor.max_video_tokens) * factor * factor, high // frames), int(low * 1.05))
    return low, per_frame * frames


class Qwen3VLReranker(QwenReranker):
    model_classes = {"qwen3_vl": "Qwen3VLForConditionalGeneration"}
    video_fps = 1.0  # the per-second rule's clock: the timestamps the processor writes
    size_text = ("full-size decode, the video processor's own resize (torchvision v2 bicubic, antialiased) to its "
                 "smart_resize of the 16-frame pair clip (32-px grid, area within its size bounds, per-frame cap as "
                 "qwen-vl-utils); video 2 then PIL bicubic to video 1's size; the clip clocked at 1 fps, each pair of "
                 "frames told its mean time (<0.5 seconds>, <2.5 seconds>, ...; video 2's from 8.5 s)")
    paper_dtype = "bf16"
    paper_dtype_source = "not in the paper: as the Qwen3-VL README loads it"
    caption_text: ClassVar[str] = ("fast and paper: its 8 reranking frames at its pixel rule, greedy, 256 new "
                                   "tokens, batched (not in the paper)")

    def frame_resize(self) -> Qwen3ClipPixels:
        vp = self.processor.video_processor
        frames = 2 * self.frames_per_video
        low, high = clip_pixel_bounds(vp, frames)
        return Qwen3ClipPixels(high, vp.patch_size * vp.merge_size, low, frames, int(vp.temporal_patch_size))

    def paper_caption_rule(self):
        return HFVideoReranker.paper_caption_rule(self)  # its own frames, greedy: the paper made no Qwen3 captions

    def _video_inputs(self, clips: list[np.ndarray]) -> tuple[list[np.ndarray], dict]:
        """The frames at their final size, with the metadata the processor's timestamps are computed from."""
        metadata = [{"total_num_frames": len(v), "fps": self.video_fps, "frames_indices": list(range(len(v)))}
                    for v in clips]
        return clips, {"do_sample_frames": False, "do_resize": False, "cap_pixels_per_frame": True,
                       "video_metadata": metadata}

    # -- sharing: video tokens and their deepstack features handed to the model together --------------------------
    def _per_video(self, out) -> list[Any]:
        layers = out.deepstack_features
        return [(tokens, [layer[i] for layer in layers]) for i, tokens in enumerate(out.pooler_output)]

    def _vision(self, videos: list[np.ndarray]) -> list[Any]:
        return [tokens for tokens, _ in self._encoded(videos)]

    def _video_forward(self, ids, videos: list[np.ndarray], positions, mask, **kwargs):
        import torch
        from transformers.models.qwen3_vl.modeling_qwen3_vl import BaseModelOutputWithDeepstackFeatures

        kept = self._encoded(videos)
        encoded = BaseModelOutputWithDeepstackFeatures(
            pooler_output=tuple(tokens for tokens, _ in kept),
            deepstack_features=[tuple(deep[k] for _, deep in kept) for k in range(len(kept[0][1]))])
        with torch.inference_mode():
            return self.model(input_ids=ids, mm_encoder_outputs={"video": encoded}, position_ids=positions,
                              attention_mask=mask, logits_to_keep=1, **kwargs)


_LICENSE = "Apache-2.0"
_EVIDENCE = ("no ConViS-Bench figure published; the Qwen3-VL Technical Report (Qwen Team, 2025) argues for its video "
             "side: text timestamps, interleaved M-RoPE, DeepStack; score it on your pairs with convis bench run")
CHECKPOINTS = [
    Release("qwen3-vl", "Qwen/Qwen3-VL-8B-Instruct", aliases=("qwen3-vl-8b",), claims=("qwen3-vl", "qwen3_vl"),
            params=8.77, license=_LICENSE, evidence=_EVIDENCE),
    Release("qwen3-vl-4b", "Qwen/Qwen3-VL-4B-Instruct", params=4.4, license=_LICENSE, evidence=_EVIDENCE),
    Release("qwen3-vl-2b", "Qwen/Qwen3-VL-2B-Instruct", params=2.13, license=_LICENSE, evidence=_EVIDENCE),
]
register_checkpoints(Qwen3VLReranker, CHECKPOINTS,
                     description="Qwen3-VL, 8 frames a video with timestamps, concept prompt as the system message "
                                 "(not in the paper)")
