"""Frames a second of the image-text towers (PE-Core, SigLIP2) on frames already at their input size, as the
decoder hands them over: at ``--shape tiny`` the tiny checkpoints on any machine, at the real shape (``7b``, the
LMM sections' word for "the released dimensions") ``open_clip.create_model(name, pretrained=None)`` on the GPU:
the released architecture with random weights, its tag's own preprocessing, as convis runs it (fp16 on a GPU)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bench.perf import gpu
from bench.perf.real_shape import require_cuda
from bench.tiny.vision import tiny_pe, tiny_siglip2

FAMILIES = ("pe", "siglip2")
REAL = {"pe": ("PE-Core-L-14-336", "meta"), "siglip2": ("ViT-SO400M-16-SigLIP2-384", "webli")}
TINY = {"pe": tiny_pe, "siglip2": tiny_siglip2}
FRAMES_A_UNIT = 8
UNITS = {"tiny": 1, "real": 64}  # 8 frames on a CPU; 512 on a GPU (16 batches of 32)


@dataclass(frozen=True)
class EncoderResult:
    family: str
    shape: str  # "tiny" or "real"
    model: str  # the checkpoint folder's family, or the real architecture's open_clip name
    device: str
    dtype: str
    frames: int
    seconds: float
    gpu_gb: float | None  # the GPU memory peak over the timed call; None on a CPU

    @property
    def frames_per_s(self) -> float:
        return self.frames / self.seconds if self.seconds > 0 else 0.0


def real_encoder(family: str):
    """The released architecture of ``family`` with random weights on the GPU, fed as its tag's config says."""
    import open_clip
    import torch

    from indexers.clip import OpenClipIndexer, open_clip_transform
    from indexers.image_text import own_frames

    require_cuda()
    name, tag = REAL[family]
    with torch.device("cuda"):
        model = open_clip.create_model(name, pretrained=None)
    keys = ("mean", "std", "interpolation", "resize_mode")  # the tag's preprocessing, as its weights would carry
    model.visual.preprocess_cfg = {**model.visual.preprocess_cfg,
                                   **{k: v for k, v in open_clip.get_pretrained_cfg(name, tag).items() if k in keys}}
    transform = open_clip_transform(model)
    dim = open_clip.get_model_config(name)["embed_dim"]
    return OpenClipIndexer(family, name, model, transform, dim, "cuda", own_frames(transform), "fast")


def measure_encoder(family: str, shape: str, scratch: Path) -> EncoderResult:
    from indexers.factory import create_indexer

    real = shape != "tiny"
    indexer = real_encoder(family) if real else create_indexer(f"{family}:{TINY[family](scratch / family / 'tiny')}")
    side = indexer.transform.crop
    rng = np.random.default_rng(0)
    units = [rng.integers(0, 256, (FRAMES_A_UNIT, side, side, 3), np.uint8)
             for _ in range(UNITS["real" if real else "tiny"])]
    indexer.embed_units(units[:1])  # one-time allocations and kernel choices stay out of the timing
    seconds, peak = gpu.timed(lambda: indexer.embed_units(units))
    return EncoderResult(family, "real" if real else "tiny", indexer.source if real else f"{family}-tiny",
                         indexer.device.type, str(indexer.dtype).removeprefix("torch."),
                         FRAMES_A_UNIT * len(units), round(seconds, 3), peak)
