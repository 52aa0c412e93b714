"""VideoMAE (transformers): a video model that sees a unit's frames as one clip."""

from __future__ import annotations

import torch

from indexers.base import INDEXERS
from indexers.hf import image_transform, load_model
from indexers.vision import ImageTransform, VideoIndexer


class VideoMAEIndexer(VideoIndexer):
    def _features(self, pixels: torch.Tensor) -> torch.Tensor:
        # mean over all space-time tokens: VideoMAE has no CLS token
        return self.model(pixel_values=pixels).last_hidden_state.mean(dim=1)


@INDEXERS.register(
    "videomae",
    default_source="MCG-NJU/videomae-base-finetuned-kinetics",
    claims=("videomae",),
    description="VideoMAE ViT (transformers), mean of space-time tokens per clip",
)
def build_videomae(source: str, device: str | None = None, **_) -> VideoMAEIndexer:
    from transformers import VideoMAEModel

    model = load_model(VideoMAEModel, "videomae", source)
    size = model.config.image_size  # VideoMAE's position table fixes the input size
    transform = image_transform(source, ImageTransform(resize=size * 8 // 7, crop=size))
    indexer = VideoMAEIndexer("videomae", source, model, transform, model.config.hidden_size, device)
    indexer.frames_per_unit = model.config.num_frames  # the clip length the model was trained on
    return indexer
