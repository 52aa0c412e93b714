"""Today's open image-text towers through open_clip: Perception Encoder PE-Core and SigLIP2.

Each is fed the pixels its weights were trained on: the model's own ``preprocess_cfg`` (the one open_clip's
``create_model_and_transforms`` builds its transform from). Both released configs squash the whole frame to the
tower's square input (no crop; PE bilinear, SigLIP2 bicubic), so every sampled frame is decoded at full size and
resized with PIL as that transform resizes a PIL image; only scaling and normalising are left to torch. Text goes
through the same tower (``embed_texts``) and its ONNX export, as CLIP's does.
"""

from __future__ import annotations

from indexers.clip import OpenClipIndexer, build_open_clip
from indexers.vision import ImageTransform
from retrieval.core.sampling import FrameSpec

FRAMES_PER_UNIT = 8  # as the fast image indexers sample: the per-second rule, at most 8 a unit


def own_frames(transform: ImageTransform) -> FrameSpec:
    """The per-second frames, each resized at decode time as the weights' own transform resizes a PIL image."""
    return FrameSpec("per-second", FRAMES_PER_UNIT, transform.at_decode())


def build_pe(source: str, device: str | None = None, protocol: str = "fast", **_) -> OpenClipIndexer:
    return build_open_clip("pe", source, device, protocol, own_frames)


def build_siglip2(source: str, device: str | None = None, protocol: str = "fast", **_) -> OpenClipIndexer:
    return build_open_clip("siglip2", source, device, protocol, own_frames)
