"""``python -m bench.perf.weights``: each new family's parameters and the memory its weights take in bf16, counted
from its real-shape architecture on PyTorch's meta device (no weights, no GPU, seconds on a CPU).

This is the floor of a GPU's memory a family needs (weights alone, 2 bytes a parameter); activations, the KV cache
and the CUDA context come on top, and only a run on the card measures them (``convis bench perf --shape 7b``).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Callable

BF16_BYTES = 2
OPEN_CLIP = {"pe": "PE-Core-L-14-336", "siglip2": "ViT-SO400M-16-SigLIP2-384", "clip": "ViT-L-14"}


def open_clip_parameters(arch: str) -> tuple[int, int]:
    """(image tower, whole model) parameters of the open_clip architecture ``arch``."""
    import torch
    from open_clip.factory import get_model_config
    from open_clip.model import CLIP, CustomTextCLIP

    config = {k: v for k, v in get_model_config(arch).items() if k != "custom_text"}
    model_class = CustomTextCLIP if "hf_model_name" in config.get("text_cfg", {}) else CLIP
    with torch.device("meta"):
        model = model_class(**config)
    return _count(model.visual), _count(model)


def qwen3_parameters(scratch: Path) -> dict[str, int]:
    """Parameters of the Qwen3-VL families at their real dimensions (``bench.perf``'s real-shape configs)."""
    import transformers

    from bench.perf import conditioned_embed, real_shape
    from bench.tiny.embedding import build_qwen3_vl_embedding
    from bench.tiny.vlm import build_qwen3_vl

    embedding = build_qwen3_vl_embedding(scratch / "embedding")
    lmm = build_qwen3_vl(scratch / "lmm")
    real = conditioned_embed.REAL_DIMENSIONS
    return {
        "qwen3-vl-embedding (2B)": _meta(transformers.Qwen3VLModel, real_shape.real_config(
            embedding, real["qwen3-vl-embedding-2b"])),
        "qwen3-vl-embedding (8B)": _meta(transformers.Qwen3VLModel, real_shape.real_config(
            embedding, real["qwen3-vl-embedding-8b"])),
        "qwen3-vl (8B)": _meta(transformers.Qwen3VLForConditionalGeneration, real_shape.real_config(
            lmm, real_shape.REAL_DIMENSIONS["qwen3-vl-8b"])),
    }


def rows(scratch: Path) -> list[tuple[str, int]]:
    """(family, parameters the job loads): the image tower alone for an image-text indexer (its text tower runs
    only for a text search), the whole model otherwise."""
    found = [(f"{name} ({arch}, image tower)", open_clip_parameters(arch)[0]) for name, arch in OPEN_CLIP.items()]
    return found + list(qwen3_parameters(scratch).items())


def _meta(model_class: Callable, config) -> int:
    import torch

    with torch.device("meta"):
        return _count(model_class._from_config(config))


def _count(model) -> int:
    return sum(p.numel() for p in model.parameters())


def main() -> None:
    with tempfile.TemporaryDirectory() as scratch:
        table = rows(Path(scratch))
    print("| family | parameters | weights in bf16 |\n| --- | ---: | ---: |")
    for name, count in table:
        print(f"| {name} | {count / 1e9:.2f} B | {count * BF16_BYTES / 2**30:.1f} GiB |")


if __name__ == "__main__":
    sys.exit(main())
