"""Shared machinery for torch vision encoders: device choice, preprocessing, batching, pooling."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Sequence

import numpy as np
import torch
import torch.nn.functional as F

from indexers.base import Indexer, l2_normalise
from retrieval.core.device import pick_device
from retrieval.core.pixels import FixedResize, ShortSideResize
from retrieval.core.sampling import FrameSpec

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
RESIZE_MODES = ("shortest", "squash")  # open_clip's preprocess_cfg modes convis follows ("longest" pads: not here)


def pick_dtype(device: torch.device, protocol: str = "fast") -> torch.dtype:
    # half precision halves memory and doubles throughput on GPUs; CPUs are faster in fp32;
    # the paper's features were computed in fp32, so its protocol keeps fp32 everywhere
    return torch.float16 if device.type == "cuda" and protocol == "fast" else torch.float32


@dataclass(frozen=True)
class ImageTransform:
    """Resize, scale to [0,1], normalise: the short side then a centre crop (the usual ViT/CNN recipe), or, with
    ``resize_mode="squash"``, the whole frame to ``crop`` x ``crop`` (open_clip's SigLIP and PE configs)."""

    resize: int = 256
    crop: int = 224
    mean: tuple[float, ...] = IMAGENET_MEAN
    std: tuple[float, ...] = IMAGENET_STD
    sized: bool = False  # frames arrive resized and cropped (at decode time): only scale and normalise
    resample: str = "bicubic"  # the filter of the checkpoint's image processor (its ``resample``), at decode time
    resize_mode: str = "shortest"  # or "squash": aspect ratio not kept, nothing cropped

    def __post_init__(self):
        if self.resize_mode not in RESIZE_MODES:
            raise ValueError(f"resize_mode is one of {', '.join(RESIZE_MODES)}, got {self.resize_mode!r}")

    def __call__(self, frames: np.ndarray) -> torch.Tensor:
        """(N, H, W, 3) uint8 -> (N, 3, crop, crop) float32."""
        x = torch.from_numpy(np.ascontiguousarray(frames)).permute(0, 3, 1, 2).float().div_(255.0)
        # frames sized at decode are already crop x crop; frames handed in at another size still get resized
        if not self.sized or tuple(x.shape[-2:]) != (self.crop, self.crop):
            x = self._resize_crop(x)
        mean = torch.tensor(self.mean).view(1, 3, 1, 1)
        std = torch.tensor(self.std).view(1, 3, 1, 1)
        return (x - mean) / std

    def _resize_crop(self, x: torch.Tensor) -> torch.Tensor:
        if self.resize_mode == "squash":  # with the checkpoint's own filter, antialiased as PIL's resize is
            mode = "bicubic" if self.resample == "bicubic" else "bilinear"
            return F.interpolate(x, size=(self.crop, self.crop), mode=mode, antialias=True, align_corners=False)
        h, w = x.shape[-2:]
        scale = self.resize / min(h, w)
        size = (max(self.crop, round(h * scale)), max(self.crop, round(w * scale)))
        x = F.interpolate(x, size=size, mode="bilinear", antialias=True, align_corners=False)
        top, left = (size[0] - self.crop) // 2, (size[1] - self.crop) // 2
        return x[..., top : top + self.crop, left : left + self.crop]

    def at_decode(self, resample: str | None = None) -> ShortSideResize | FixedResize:
        """The same resize (and crop) done per full-size frame with PIL while decoding, as HF processors and
        open_clip's transforms do, with the processor's filter unless ``resample`` names another."""
        if self.resize_mode == "squash":
            return FixedResize(self.crop, self.crop, resample or self.resample)
        return ShortSideResize(self.resize, self.crop, resample or self.resample)


def paper_frames(rule: str, count: int, transform: ImageTransform) -> FrameSpec:
    """The reference's frames for a feature model: its rule, full-size frames resized as its processor does."""
    return FrameSpec(rule, count, transform.at_decode())


def frame_batches(counts: Sequence[int], size: int) -> list[list[tuple[int, int, int]]]:
    """Consecutive frames of several units in batches of ``size``: each batch is (unit, start, stop) slices."""
    batches, current, room = [], [], size
    for unit, count in enumerate(counts):
        start = 0
        while start < count:
            stop = min(count, start + room)
            current.append((unit, start, stop))
            room -= stop - start
            start = stop
            if room == 0:
                batches.append(current)
                current, room = [], size
    if current:
        batches.append(current)
    return batches


class TorchIndexer(Indexer):
    """An indexer around a torch module; subclasses implement ``_features``."""

    batch_size = 32  # frames (clips for a video model) a forward pass takes on an accelerator
    # on the CPU a batch of 32 frames held 0.4 GB more activations than one of 8 for no measurable speed
    # (EfficientNet-Lite0, 128 frames: peak 1141 vs 765 MB, 4.5-6 s either way): the CPU embeds in smaller batches
    cpu_batch_size = 8

    def __init__(self, name: str, source: str, model: torch.nn.Module, transform: ImageTransform,
                 dim: int, device: str | None = None, frame_spec: FrameSpec | None = None, protocol: str = "fast"):
        self.name, self.source, self.dim, self.protocol = name, source, dim, protocol
        self.frame_spec = frame_spec or type(self).frame_spec
        # frames resized at decode time (the paper's pixels) only need scaling and normalising here
        self.transform = replace(transform, sized=self.frame_spec.sized_at_decode)
        self.device = pick_device(device)
        if self.device.type == "cpu":
            self.batch_size = min(self.batch_size, self.cpu_batch_size)
        self.dtype = pick_dtype(self.device, protocol)
        self.model = model.to(self.device, self.dtype).eval()

    @torch.inference_mode()
    def _run(self, pixels: torch.Tensor) -> np.ndarray:
        out = self._features(pixels.to(self.device, self.dtype))
        return out.float().cpu().numpy()

    def _features(self, pixels: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError


class ImageIndexer(TorchIndexer):
    """Embeds every sampled frame, mean-pools per unit (the paper's protocol), L2-normalises."""

    kind = "image"

    def embed_units(self, units: Sequence[np.ndarray]) -> np.ndarray:
        if not units:
            return np.zeros((0, self.dim), np.float32)
        counts = [len(u) for u in units]
        # transformed one batch at a time: a long video's hundreds of frames as float tensors
        # would take gigabytes at once; units may differ in size, so a batch joins unit slices
        feats = np.concatenate([
            self._run(torch.cat([self.transform(units[u][a:b]) for u, a, b in batch]))
            for batch in frame_batches(counts, self.batch_size)
        ])
        bounds = np.cumsum([0, *counts])
        pooled = np.stack([feats[a:b].mean(axis=0) for a, b in zip(bounds[:-1], bounds[1:], strict=False)])
        return l2_normalise(pooled)


class VideoIndexer(TorchIndexer):
    """Embeds each unit's frames together as one clip (B, T, 3, H, W)."""

    kind = "video"
    batch_size = 4

    def embed_units(self, units: Sequence[np.ndarray]) -> np.ndarray:
        if not units:
            return np.zeros((0, self.dim), np.float32)
        feats = [  # transformed per batch, like frames (see ImageIndexer)
            self._run(torch.stack([self.transform(u) for u in units[i : i + self.batch_size]]))
            for i in range(0, len(units), self.batch_size)
        ]
        return l2_normalise(np.concatenate(feats))
