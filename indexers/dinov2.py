"""DINOv2 (transformers): the paper's strongest global signal for location."""

from __future__ import annotations

import torch

from indexers.base import INDEXERS
from indexers.hf import image_transform, load_model
from indexers.vision import ImageIndexer


class Dinov2Indexer(ImageIndexer):
    def _features(self, pixels: torch.Tensor) -> torch.Tensor:
        # pooler_output is the layer-normed CLS token, the image-level embedding DINOv2 is trained for
        return self.model(pixel_values=pixels).pooler_output


@INDEXERS.register(
    "dinov2",
    default_source="facebook/dinov2-large",
    claims=("dinov2",),
    description="DINOv2 ViT (transformers), CLS token per frame, mean-pooled",
)
def build_dinov2(source: str, device: str | None = None, **_) -> Dinov2Indexer:
    from transformers import AutoModel

    model = load_model(AutoModel, "dinov2", source)
    return Dinov2Indexer("dinov2", source, model, image_transform(source), model.config.hidden_size, device)
