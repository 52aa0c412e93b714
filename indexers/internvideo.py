"""InternVideo (InternVideo2 checkpoints published for transformers' AutoModel).

The published checkpoints ship their modelling code with the weights, so loading
them executes that code: convis does so only when the user opts in with
``trust_remote_code`` (CLI: ``--trust-remote-code``).  The video embedding is read
through the first method the checkpoint provides, in the order below.
"""

from __future__ import annotations

import torch

from indexers.base import INDEXERS
from indexers.hf import image_transform, load_model
from indexers.vision import ImageTransform, ModelUnavailableError, VideoIndexer

FEATURE_METHODS = ("get_vid_feat", "encode_vision", "get_video_features")
DEFAULT_FRAMES = 8


def video_features(model, pixels: torch.Tensor) -> torch.Tensor:
    """(B, T, 3, H, W) -> (B, D) through the checkpoint's own embedding method."""
    for method in FEATURE_METHODS:
        fn = getattr(model, method, None)
        if fn is not None:
            out = fn(pixels)
            out = out[0] if isinstance(out, (tuple, list)) else out
            return out if out.dim() == 2 else out.mean(dim=1)
    return model(pixels).last_hidden_state.mean(dim=1)


class InternVideoIndexer(VideoIndexer):
    def _features(self, pixels: torch.Tensor) -> torch.Tensor:
        return video_features(self.model, pixels)


def _frames(config) -> int:
    for key in ("num_frames", "frames", "video_num_frames"):
        value = getattr(config, key, None)
        if isinstance(value, int) and value > 0:
            return value
    return DEFAULT_FRAMES


def _dim(model, transform: ImageTransform, frames: int) -> int:
    # checkpoints disagree on where they store the width; one dummy clip is the reliable answer
    probe = torch.zeros(1, frames, 3, transform.crop, transform.crop)
    with torch.inference_mode():
        return int(video_features(model, probe).shape[-1])


@INDEXERS.register(
    "internvideo",
    default_source="OpenGVLab/InternVideo2-Stage2_1B-224p-f4",
    aliases=("internvideo2",),
    claims=("internvideo",),
    description="InternVideo2 video encoder (checkpoint's own code; needs --trust-remote-code)",
)
def build_internvideo(source: str, device: str | None = None, trust_remote_code: bool = False, **_):
    from transformers import AutoModel

    if not trust_remote_code:
        raise ModelUnavailableError(
            f"internvideo checkpoints ({source}) run code shipped with the weights; "
            "re-run with --trust-remote-code if you trust that source"
        )
    model = load_model(AutoModel, "internvideo", source, trust_remote_code=True).eval()
    size = int(getattr(model.config, "image_size", 224) or 224)
    transform = image_transform(source, ImageTransform(resize=size * 8 // 7, crop=size))
    frames = _frames(model.config)
    indexer = InternVideoIndexer("internvideo", source, model, transform, _dim(model, transform, frames), device)
    indexer.frames_per_unit = frames
    return indexer
