"""Loading transformers checkpoints (hub id or local folder) without surprises offline."""

from __future__ import annotations

from pathlib import Path

from indexers.errors import unavailable
from indexers.vision import IMAGENET_MEAN, IMAGENET_STD, ImageTransform
from retrieval.core.pixels import RESAMPLE


def load_model(auto_class, family: str, source: str, **kwargs):
    """``auto_class.from_pretrained(source)`` preferring safetensors; failures become one clear line."""
    try:
        return auto_class.from_pretrained(source, **kwargs)
    except (OSError, ValueError, EnvironmentError) as exc:
        raise unavailable(family, source, exc) from None


def image_transform(source: str, default: ImageTransform | None = None) -> ImageTransform:
    """The resize/crop/normalisation a checkpoint was trained with, read from its image processor."""
    default = default or ImageTransform()
    try:
        from transformers import AutoImageProcessor

        proc = AutoImageProcessor.from_pretrained(source)
    except (OSError, ValueError, EnvironmentError):
        return default  # a bare config folder (tests, converted checkpoints): keep the family default
    crop = _edge(getattr(proc, "crop_size", None)) or default.crop
    resize = _edge(getattr(proc, "size", None)) or default.resize
    mean = tuple(getattr(proc, "image_mean", None) or IMAGENET_MEAN)
    std = tuple(getattr(proc, "image_std", None) or IMAGENET_STD)
    return ImageTransform(resize=max(resize, crop), crop=crop, mean=mean, std=std,
                          resample=_filter(getattr(proc, "resample", None)) or default.resample)


def _filter(resample) -> str | None:
    """A processor's ``resample`` (a PIL.Image.Resampling value) as the name the frame rules use."""
    names = {value: name for name, value in RESAMPLE.items()}
    try:
        return names.get(int(resample)) if resample is not None else None
    except (TypeError, ValueError):
        return None


def _edge(size) -> int | None:
    if size is None:
        return None
    if isinstance(size, int):
        return size
    getter = size.get if isinstance(size, dict) else lambda k: getattr(size, k, None)
    return getter("shortest_edge") or getter("height")


def is_local(source: str) -> bool:
    return Path(source).expanduser().is_dir()
