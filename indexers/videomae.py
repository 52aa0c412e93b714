"""VideoMAE (transformers): a video model that sees a unit's frames as one clip.

As the reference's feature extraction: the clip length the model was trained on (16 frames)
spread over the unit (``np.linspace(0, n-1, 16, dtype=int)``; a shorter unit gives every frame,
padded with its last), the mean of all space-time tokens. ``paper`` decodes full-size frames and
resizes them as the model's image processor does (PIL bilinear short side 224, centre crop 224), uses
the paper's ``MCG-NJU/videomae-large`` and fp32; ``fast`` keeps the smaller Kinetics-finetuned
base model (86M parameters against 304M) and decoder-scaled frames.
"""

from __future__ import annotations

import torch

from indexers.families import VIDEOMAE_POOLING
from indexers.hf import image_transform, load_model
from indexers.vision import ImageTransform, VideoIndexer
from retrieval.core.sampling import FrameSpec


class VideoMAEIndexer(VideoIndexer):
    pooling = VIDEOMAE_POOLING

    def _features(self, pixels: torch.Tensor) -> torch.Tensor:
        # mean over all space-time tokens: VideoMAE has no CLS token
        return self.model(pixel_values=pixels).last_hidden_state.mean(dim=1)


def build_videomae(source: str, device: str | None = None, protocol: str = "fast", **_) -> VideoMAEIndexer:
    from transformers import VideoMAEModel

    model = load_model(VideoMAEModel, "videomae", source)
    size = model.config.image_size  # VideoMAE's position table fixes the input size
    # VideoMAEImageProcessor's defaults when the checkpoint ships none: bilinear (resample=2)
    transform = image_transform(source, ImageTransform(resize=size * 8 // 7, crop=size, resample="bilinear"))
    # the clip length the model was trained on, spread over the unit as the reference does
    resize = transform.at_decode() if protocol == "paper" else None
    spec = FrameSpec("linspace-pad", model.config.num_frames, resize)
    return VideoMAEIndexer("videomae", source, model, transform, model.config.hidden_size, device, spec, protocol)
