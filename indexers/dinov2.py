"""DINOv2 (transformers): the paper's strongest global signal for location.

Both protocols pool as the reference does (``last_hidden_state.mean(dim=1)``: every token, CLS
included, per frame; then the mean over the unit's frames). ``paper`` embeds every frame of the
unit, decoded at full size and resized as DINOv2's image processor does (bicubic short side 256,
centre crop 224), in fp32; ``fast`` embeds 8 frames at about 1 a second, decoder-scaled.
"""

from __future__ import annotations

import torch

from indexers.families import DINOV2_POOLING
from indexers.hf import image_transform, load_model
from indexers.vision import ImageIndexer, paper_frames


class Dinov2Indexer(ImageIndexer):
    pooling = DINOV2_POOLING

    def _features(self, pixels: torch.Tensor) -> torch.Tensor:
        return self.model(pixel_values=pixels).last_hidden_state.mean(dim=1)



def build_dinov2(source: str, device: str | None = None, protocol: str = "fast", **_) -> Dinov2Indexer:
    from transformers import AutoModel

    model = load_model(AutoModel, "dinov2", source)
    transform = image_transform(source)
    spec = paper_frames("every", 1, transform) if protocol == "paper" else None
    return Dinov2Indexer("dinov2", source, model, transform, model.config.hidden_size, device, spec, protocol)
