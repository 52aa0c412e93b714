"""Tiny randomly initialised vision models saved as real checkpoints (they build offline in < 1 s).

They drive the real loading code (from_pretrained / open_clip local-dir), preprocessing and
forward passes through the indexer factory, without any downloaded weights.
"""

from __future__ import annotations

import json
from pathlib import Path

from bench.tiny.seed import seed_torch


def tiny_dinov2(folder: Path) -> Path:
    from transformers import Dinov2Config, Dinov2Model

    seed_torch(0)
    config = Dinov2Config(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
                          patch_size=14, image_size=56)
    Dinov2Model(config).save_pretrained(folder)
    return folder


def tiny_videomae(folder: Path) -> Path:
    from transformers import VideoMAEConfig, VideoMAEModel

    seed_torch(0)
    config = VideoMAEConfig(image_size=32, patch_size=16, num_frames=4, tubelet_size=2, hidden_size=32,
                            num_hidden_layers=2, num_attention_heads=2, intermediate_size=64)
    VideoMAEModel(config).save_pretrained(folder)
    return folder


def tiny_hf_clip(folder: Path) -> Path:
    from transformers import CLIPConfig, CLIPModel

    seed_torch(0)
    config = CLIPConfig(
        text_config={"hidden_size": 32, "num_hidden_layers": 1, "num_attention_heads": 2, "intermediate_size": 64,
                     "vocab_size": 100, "max_position_embeddings": 16},
        vision_config={"hidden_size": 32, "num_hidden_layers": 1, "num_attention_heads": 2,
                       "intermediate_size": 64, "image_size": 32, "patch_size": 16},
        projection_dim=16,
    )
    CLIPModel(config).save_pretrained(folder)
    return folder


OPEN_CLIP_CFG = {
    "embed_dim": 16,
    "vision_cfg": {"image_size": 32, "layers": 1, "width": 32, "head_width": 16, "patch_size": 16},
    "text_cfg": {"context_length": 8, "vocab_size": 100, "width": 32, "heads": 2, "layers": 1},
}


def tiny_open_clip(folder: Path, with_weights: bool = True, vocab: int | None = None) -> Path:
    """``vocab``: tokens in the text tower (open_clip's own tokenizer needs 49408 to embed text; the default
    100 keeps the checkpoint tiny where only images are embedded)."""
    import copy

    import open_clip
    from safetensors.torch import save_file

    cfg = copy.deepcopy(OPEN_CLIP_CFG)
    cfg["text_cfg"]["vocab_size"] = vocab or cfg["text_cfg"]["vocab_size"]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "open_clip_config.json").write_text(json.dumps({"model_cfg": cfg, "preprocess_cfg": {}}))
    if with_weights:
        seed_torch(0)
        model = open_clip.create_model(f"local-dir:{folder}")
        state = {k: v.contiguous() for k, v in model.state_dict().items()}
        save_file(state, str(folder / "open_clip_model.safetensors"))
    return folder
