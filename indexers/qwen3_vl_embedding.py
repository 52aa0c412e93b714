"""Qwen3-VL-Embedding (2B, 8B; Apache-2.0): one vector per unit and instruction, text in the same space.

Everything here follows the reference, QwenLM/Qwen3-VL-Embedding ``src/models/qwen3_vl_embedding.py``
(``Qwen3VLEmbedder``) and the qwen-vl-utils 0.0.14 it calls (QwenLM/Qwen3-VL
``qwen-vl-utils/src/qwen_vl_utils/vision_process.py``), which convis does not depend on:

* model: ``Qwen3VLForEmbedding`` is a ``Qwen3VLModel`` under ``model``; its hub weights are named ``model.*``,
  which ``Qwen3VLModel.from_pretrained`` takes as they are (a checkpoint without the prefix loads too);
* chat: the instruction is the system message (stripped, a full stop added unless it ends in punctuation);
  the user turn is the video, then the text; the template is rendered with ``add_generation_prompt=True``;
* frames: a video file is read at ``fps=1``, at most ``MAX_FRAMES`` (``smart_nframes``: the ``qwen-fps`` rule
  of ``retrieval.core.sampling``); a unit's decoded frames are then handed over as the reference's frame list:
  at most ``MAX_FRAMES`` by ``np.linspace(0, n-1, 64, dtype=int)`` (``sample_frames``), padded with the last to
  an even count, with the frame list's metadata (2 frames a second, indices 0..n-1: the processor's
  ``<t seconds>`` stamps);
* pixels: each frame as ``fetch_image`` (PIL bicubic to ``smart_resize``, factor 32, 4 to 16384 tokens), then
  the clip as ``fetch_video`` (torchvision bicubic with antialias to ``smart_resize`` within 128 to
  ``min(768, total_pixels / frames * 2)`` tokens a frame, ``total_pixels`` = 10 * 768 * 32 * 32); the processor
  then runs with ``do_resize=False`` (rescale, normalise by 0.5/0.5, 16-pixel patches), padding right, on the
  prompt the reference's transformers 4.57 tokenises (``unwrapped_video``);
* vector: the last hidden state at each row's last attended token, L2-normalised.
"""

from __future__ import annotations

import math
import unicodedata
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch

from indexers.base import l2_normalise
from indexers.conditioned import ConditionedIndexer
from indexers.errors import unavailable
from indexers.instructions import QWEN3_VL_EMBEDDING
from indexers.vision import pick_device
from retrieval.core.pixels import PerFrameResize
from retrieval.core.sampling import QWEN_FPS, FrameSpec

# the reference's constants (Qwen3VLEmbedder and qwen-vl-utils)
MAX_LENGTH = 8192
FACTOR = 32  # image_patch_size 16 x spatial merge 2
IMAGE_MIN_PIXELS, IMAGE_MAX_PIXELS = 4 * FACTOR**2, 16384 * FACTOR**2  # fetch_image's defaults
VIDEO_MIN_PIXELS, VIDEO_FRAME_MAX_PIXELS = 128 * FACTOR**2, 768 * FACTOR**2  # fetch_video's
TOTAL_PIXELS = 10 * VIDEO_FRAME_MAX_PIXELS  # MAX_TOTAL_PIXELS: the pixel budget of one clip
FPS, MAX_FRAMES = 1.0, 64
FRAME_FACTOR = 2  # frames go in pairs (temporal patch 2)
LIST_FPS = 2.0  # qwen-vl-utils' assumed rate of a frame list (its ``sample_fps`` default)
MAX_RATIO = 200
POOLING = "last token's hidden state (the reference's _pooling_last), L2-normalised"


def smart_resize(height: int, width: int, min_pixels: int, max_pixels: int, factor: int = FACTOR) -> tuple[int, int]:
    """qwen-vl-utils' ``smart_resize``: sides multiples of ``factor``, area within the bounds, aspect kept."""
    if max(height, width) / min(height, width) > MAX_RATIO:
        raise ValueError(f"a frame's aspect ratio must be under {MAX_RATIO}, got {width}x{height}")
    h_bar = max(factor, round(height / factor) * factor)
    w_bar = max(factor, round(width / factor) * factor)
    if h_bar * w_bar > max_pixels:
        beta = math.sqrt(height * width / max_pixels)
        h_bar = math.floor(height / beta / factor) * factor
        w_bar = math.floor(width / beta / factor) * factor
    elif h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h_bar = math.ceil(height * beta / factor) * factor
        w_bar = math.ceil(width * beta / factor) * factor
    return h_bar, w_bar


def clip_size(height: int, width: int, frames: int) -> tuple[int, int]:
    """``fetch_video``'s size for a clip of ``frames`` (already even) frames of ``height`` x ``width``."""
    max_pixels = max(min(VIDEO_FRAME_MAX_PIXELS, TOTAL_PIXELS / frames * FRAME_FACTOR), int(VIDEO_MIN_PIXELS * 1.05))
    return smart_resize(height, width, VIDEO_MIN_PIXELS, max_pixels)


@dataclass(frozen=True)
class FrameListResize(PerFrameResize):
    """``fetch_image`` on each frame of a frame list: PIL bicubic to its ``smart_resize`` (factor 32)."""

    resample: str = "bicubic"

    def steps(self, width: int, height: int) -> list[tuple[int, int]]:
        h, w = smart_resize(height, width, IMAGE_MIN_PIXELS, IMAGE_MAX_PIXELS)
        return [(w, h)]

    def describe(self) -> str:
        return "full-size decode, PIL bicubic to multiples of 32 (qwen-vl-utils fetch_image)"


FRAME_SPEC = FrameSpec(QWEN_FPS, MAX_FRAMES, FrameListResize(), rate=FPS)


def reference_clip(frames: np.ndarray) -> torch.Tensor:
    """A unit's (T, H, W, 3) uint8 frames as the reference's frame list reaches the processor: (T', 3, h, w)
    float, T' <= 64 and even, integer-valued (torchvision resizes the uint8 tensor)."""
    from torchvision.transforms import InterpolationMode
    from torchvision.transforms import functional as tvf

    frames = np.asarray(frames)
    if len(frames) > MAX_FRAMES:
        frames = frames[np.linspace(0, len(frames) - 1, MAX_FRAMES, dtype=int)]
    resize = FrameListResize()
    images = [resize.apply(frame) for frame in frames]
    images += images[-1:] * (-len(images) % FRAME_FACTOR)
    video = torch.from_numpy(np.stack(images)).permute(0, 3, 1, 2)
    size = clip_size(video.shape[2], video.shape[3], len(video))
    return tvf.resize(video, list(size), interpolation=InterpolationMode.BICUBIC, antialias=True).float()


def clip_metadata(frames: int) -> dict:
    """qwen-vl-utils' metadata of a frame list: its assumed rate and the frames' own indices."""
    return {"fps": LIST_FPS, "frames_indices": list(range(frames)), "total_num_frames": frames}


def system_text(instruction: str) -> str:
    """The reference's instruction clean-up: stripped, a full stop added unless it ends in punctuation."""
    instruction = instruction.strip()
    if instruction and not unicodedata.category(instruction[-1]).startswith("P"):
        instruction += "."
    return instruction


def conversation(instruction: str, *, video: bool = False, text: str | None = None) -> list[dict]:
    """The reference's chat: the instruction as the system message, then the video, then the text."""
    content: list[dict] = [{"type": "video"}] if video else []
    if text is not None:
        content.append({"type": "text", "text": text})
    if not content:
        content.append({"type": "text", "text": "NULL"})  # the reference's empty input
    return [{"role": "system", "content": [{"type": "text", "text": system_text(instruction)}]},
            {"role": "user", "content": content}]


WRAPPED_VIDEO = "<|vision_start|><|video_pad|><|vision_end|>"


def unwrapped_video(prompt: str) -> str:
    """The template's ``<|vision_start|><|video_pad|><|vision_end|>`` as the bare video token.

    The reference's processor (transformers 4.57) replaces that whole triple by the clip's frames, each
    ``<t seconds><|vision_start|>...<|vision_end|>``; transformers 5 replaces only the video token and so would
    wrap the frames in a second start and end.  Handing 5 the bare token gives the reference's tokens."""
    return prompt.replace(WRAPPED_VIDEO, "<|video_pad|>")


def last_token(hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """The hidden state at each row's last attended position (padding right or left)."""
    last = mask.shape[1] - 1 - mask.flip(dims=[1]).argmax(dim=1)
    return hidden[torch.arange(hidden.shape[0], device=hidden.device), last]


class Qwen3VLEmbeddingIndexer(ConditionedIndexer):
    """Qwen3-VL-Embedding: a unit's clip (or a text) under an instruction, one unit-norm vector each."""

    pooling = POOLING
    frame_spec = FRAME_SPEC
    batch_size = 4  # units a forward pass takes (each up to 64 frames, about 7.7k tokens)

    def __init__(self, source: str, model, processor, device: str | None = None, protocol: str = "fast"):
        self.name, self.source, self.protocol = "qwen3-vl-embedding", source, protocol
        self.instructions = QWEN3_VL_EMBEDDING
        self.device = pick_device(device)
        self.dtype = torch.bfloat16 if self.device.type == "cuda" else torch.float32
        self.model = model.to(self.device, self.dtype).eval()
        self.processor = processor
        self.dim = int(model.config.text_config.hidden_size)

    def embed_units(self, units: Sequence[np.ndarray], instruction: str | None = None) -> np.ndarray:
        said = self.instructions.generic if instruction is None else instruction
        rows = [self._embed(self.unit_inputs(units[i:i + self.batch_size], said))
                for i in range(0, len(units), self.batch_size)]
        return np.concatenate(rows) if rows else np.zeros((0, self.dim), np.float32)

    def embed_texts(self, texts: Sequence[str], instruction: str | None = None) -> np.ndarray:
        said = self.instructions.query if instruction is None else instruction
        rows = [self._embed(self.text_inputs(texts[i:i + self.batch_size], said))
                for i in range(0, len(texts), self.batch_size)]
        return np.concatenate(rows) if rows else np.zeros((0, self.dim), np.float32)

    def unit_inputs(self, units: Sequence[np.ndarray], instruction: str):
        """The model's inputs for ``units`` under ``instruction``, made as the reference makes them."""
        clips = [reference_clip(unit) for unit in units]
        chats = [conversation(instruction, video=True) for _ in clips]
        return self._processed(chats, videos=clips, video_metadata=[clip_metadata(len(c)) for c in clips],
                               do_resize=False, do_sample_frames=False,
                               cap_pixels_per_frame=False)  # resizing is off: no cap to apply

    def text_inputs(self, texts: Sequence[str], instruction: str):
        """The model's inputs for ``texts`` (each the user's text) under ``instruction``."""
        return self._processed([conversation(instruction, text=text) for text in texts])

    def _processed(self, chats: list, **vision):
        prompts = self.processor.apply_chat_template(chats, add_generation_prompt=True, tokenize=False)
        prompts = [unwrapped_video(prompt) for prompt in prompts]
        return self.processor(text=prompts, truncation=True, max_length=MAX_LENGTH, padding=True,
                              padding_side="right", return_tensors="pt", **vision)

    @torch.inference_mode()
    def _embed(self, inputs) -> np.ndarray:
        inputs = {k: v.to(self.device) for k, v in inputs.items()}
        if "pixel_values_videos" in inputs:
            inputs["pixel_values_videos"] = inputs["pixel_values_videos"].to(self.dtype)
        hidden = self.model(**inputs).last_hidden_state
        return l2_normalise(last_token(hidden, inputs["attention_mask"]).float().cpu().numpy())


def load_embedding_model(source: str):
    """The ``Qwen3VLModel`` of a Qwen3-VL-Embedding checkpoint, every weight loaded (hub ``model.*`` or bare)."""
    from transformers import Qwen3VLModel

    try:
        model, info = Qwen3VLModel.from_pretrained(source, output_loading_info=True)
    except (OSError, ValueError, EnvironmentError) as exc:
        raise unavailable("qwen3-vl-embedding", source, exc) from None
    if info["missing_keys"]:  # random layers would embed noise without a word: refuse instead
        missing = sorted(info["missing_keys"])
        raise unavailable("qwen3-vl-embedding", source, ValueError(f"weights missing: {', '.join(missing[:3])}"))
    return model


def build_qwen3_vl_embedding(source: str, device: str | None = None, protocol: str = "fast",
                             **_) -> Qwen3VLEmbeddingIndexer:
    from transformers import Qwen3VLProcessor

    model = load_embedding_model(source)
    try:
        processor = Qwen3VLProcessor.from_pretrained(source, padding_side="right")
    except (OSError, ValueError, EnvironmentError) as exc:
        raise unavailable("qwen3-vl-embedding", source, exc) from None
    return Qwen3VLEmbeddingIndexer(source, model, processor, device, protocol)
