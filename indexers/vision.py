"""Shared machinery for torch vision encoders: device choice, preprocessing, batching, pooling."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch
import torch.nn.functional as F

from indexers.base import Indexer, l2_normalise

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)


class ModelUnavailableError(RuntimeError):
    """Weights could not be loaded; the message says how to provide them."""


def pick_device(device: str | None = None) -> torch.device:
    if device:
        return torch.device(device)
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def pick_dtype(device: torch.device) -> torch.dtype:
    # half precision halves memory and doubles throughput on GPUs; CPUs are faster in fp32
    return torch.float16 if device.type == "cuda" else torch.float32


def unavailable(family: str, source: str, exc: BaseException) -> ModelUnavailableError:
    reason = " ".join(str(exc).split())[:200]
    return ModelUnavailableError(
        f"cannot load {family} weights {source!r} ({reason}); download them once with hub access "
        f"(they are cached under HF_HOME) or pass a local weights folder, e.g. --indexer {family}:/path/to/weights"
    )


@dataclass(frozen=True)
class ImageTransform:
    """Resize the short side, centre-crop, scale to [0,1], normalise: the usual ViT/CNN recipe."""

    resize: int = 256
    crop: int = 224
    mean: tuple[float, ...] = IMAGENET_MEAN
    std: tuple[float, ...] = IMAGENET_STD

    def __call__(self, frames: np.ndarray) -> torch.Tensor:
        """(N, H, W, 3) uint8 -> (N, 3, crop, crop) float32."""
        x = torch.from_numpy(np.ascontiguousarray(frames)).permute(0, 3, 1, 2).float().div_(255.0)
        h, w = x.shape[-2:]
        scale = self.resize / min(h, w)
        size = (max(self.crop, round(h * scale)), max(self.crop, round(w * scale)))
        x = F.interpolate(x, size=size, mode="bilinear", antialias=True, align_corners=False)
        top, left = (size[0] - self.crop) // 2, (size[1] - self.crop) // 2
        x = x[..., top : top + self.crop, left : left + self.crop]
        mean = torch.tensor(self.mean).view(1, 3, 1, 1)
        std = torch.tensor(self.std).view(1, 3, 1, 1)
        return (x - mean) / std


class TorchIndexer(Indexer):
    """An indexer around a torch module; subclasses implement ``_features``."""

    batch_size = 32

    def __init__(self, name: str, source: str, model: torch.nn.Module, transform: ImageTransform,
                 dim: int, device: str | None = None):
        self.name, self.source, self.dim, self.transform = name, source, dim, transform
        self.device = pick_device(device)
        self.dtype = pick_dtype(self.device)
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
        # units may differ in size (different videos); after the transform all frames match
        pixels = torch.cat([self.transform(u) for u in units])
        feats = np.concatenate([
            self._run(pixels[i : i + self.batch_size]) for i in range(0, len(pixels), self.batch_size)
        ])
        bounds = np.cumsum([0, *counts])
        pooled = np.stack([feats[a:b].mean(axis=0) for a, b in zip(bounds[:-1], bounds[1:])])
        return l2_normalise(pooled)


class VideoIndexer(TorchIndexer):
    """Embeds each unit's frames together as one clip (B, T, 3, H, W)."""

    kind = "video"
    batch_size = 4

    def embed_units(self, units: Sequence[np.ndarray]) -> np.ndarray:
        if not units:
            return np.zeros((0, self.dim), np.float32)
        clips = [self.transform(u) for u in units]
        feats = [
            self._run(torch.stack(clips[i : i + self.batch_size]))
            for i in range(0, len(clips), self.batch_size)
        ]
        return l2_normalise(np.concatenate(feats))
