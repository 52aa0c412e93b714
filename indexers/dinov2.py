"""DINOv2 (transformers): the paper's strongest global signal for location.

Both protocols pool as the reference does (``last_hidden_state.mean(dim=1)``: every token, CLS
included, per frame; then the mean over the unit's frames). ``paper`` embeds every frame of the
unit, decoded at full size and resized as DINOv2's image processor does (bicubic short side 256,
centre crop 224), in fp32; ``fast`` embeds 8 frames at about 1 a second, decoder-scaled.
"""

from __future__ import annotations

import torch

from indexers.base import FAST_DTYPE, INDEXERS, PAPER_DTYPE, model_card
from indexers.hf import image_transform, load_model
from indexers.vision import ImageIndexer, paper_frames
from retrieval.core.sampling import RULE_TEXT

POOLING = "mean of all tokens (CLS included) per frame, then mean over frames"


class Dinov2Indexer(ImageIndexer):
    pooling = POOLING

    def _features(self, pixels: torch.Tensor) -> torch.Tensor:
        return self.model(pixel_values=pixels).last_hidden_state.mean(dim=1)


CARD = {
    "fast": model_card("8 a unit: " + RULE_TEXT["per-second"], "decoder-scaled to short side 256, then resize "
                       "256 + centre crop 224 (bilinear)", POOLING, FAST_DTYPE),
    "paper": model_card(RULE_TEXT["every"], "full-size decode, bicubic short side 256 + centre crop 224 (the "
                        "model's image processor)", POOLING, PAPER_DTYPE),
}


@INDEXERS.register(
    "dinov2",
    default_source="facebook/dinov2-large",
    claims=("dinov2",),
    description="DINOv2 ViT (transformers), mean of all tokens per frame, mean-pooled over frames",
    card=CARD,
)
def build_dinov2(source: str, device: str | None = None, protocol: str = "fast", **_) -> Dinov2Indexer:
    from transformers import AutoModel

    model = load_model(AutoModel, "dinov2", source)
    transform = image_transform(source)
    spec = paper_frames("every", 1, transform) if protocol == "paper" else None
    return Dinov2Indexer("dinov2", source, model, transform, model.config.hidden_size, device, spec, protocol)
