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


# PE-Core: the real PE-Core-T vision trunk (timm's vit_pe_core_tiny_patch16_384, 6M parameters, PE's own rope ViT
# and attention pool) under the PE text config shrunk; the preprocess_cfg the released PE-Core weights carry
TINY_PE_CFG = {
    "embed_dim": 16,
    "vision_cfg": {"image_size": 384, "timm_model_name": "vit_pe_core_tiny_patch16_384",
                   "timm_model_pretrained": False, "timm_pool": "map", "timm_proj": None},
    "text_cfg": {"context_length": 32, "vocab_size": 49408, "width": 32, "heads": 2, "layers": 1},
    "custom_text": True,
}
PE_PREPROCESS = {"mean": [0.5, 0.5, 0.5], "std": [0.5, 0.5, 0.5], "interpolation": "bilinear", "resize_mode": "squash"}

# SigLIP2: its text config (Gemma tokenizer, canonicalized text, no causal mask, last-token pool) shrunk, and its
# preprocess_cfg; the vision tower is open_clip's own ViT at the tiny size (timm's smallest SigLIP tower is a
# ViT-B of 86M parameters)
TINY_SIGLIP2_CFG = {
    "embed_dim": 16, "init_logit_bias": -10, "custom_text": True,
    "vision_cfg": {"image_size": 32, "layers": 1, "width": 32, "head_width": 16, "patch_size": 16},
    "text_cfg": {"context_length": 64, "vocab_size": 320, "hf_tokenizer_name": "timm/ViT-SO400M-16-SigLIP2-384",
                 "tokenizer_kwargs": {"clean": "canonicalize"}, "width": 32, "heads": 2, "layers": 1,
                 "mlp_ratio": 3.7362, "no_causal_mask": True, "proj_bias": True, "pool_type": "last",
                 "norm_kwargs": {"eps": 1e-06}, "act_kwargs": {"approximate": "tanh"}},
}
SIGLIP2_PREPROCESS = {"mean": [0.5, 0.5, 0.5], "std": [0.5, 0.5, 0.5], "interpolation": "bicubic",
                      "resize_mode": "squash"}


def _save_open_clip(folder: Path, cfg: dict, preprocess: dict) -> Path:
    import open_clip
    from safetensors.torch import save_file

    folder.mkdir(parents=True, exist_ok=True)
    (folder / "open_clip_config.json").write_text(json.dumps({"model_cfg": cfg, "preprocess_cfg": preprocess}))
    seed_torch(0)
    model = open_clip.create_model(f"local-dir:{folder}")
    save_file({k: v.contiguous() for k, v in model.state_dict().items()}, str(folder / "open_clip_model.safetensors"))
    return folder


def tiny_pe(folder: Path) -> Path:
    """A PE-Core checkpoint loadable by ``-i pe:FOLDER`` (open_clip's CLIP tokenizer: the full 49408 ids)."""
    return _save_open_clip(folder, TINY_PE_CFG, PE_PREPROCESS)


def tiny_siglip2(folder: Path) -> Path:
    """A SigLIP2 checkpoint loadable by ``-i siglip2:FOLDER``, with a Gemma-shaped tokenizer in the folder (open_clip
    reads a local folder's tokenizer from the folder itself)."""
    gemma_like_tokenizer(TINY_SIGLIP2_CFG["text_cfg"]["vocab_size"]).save_pretrained(folder)
    return _save_open_clip(folder, TINY_SIGLIP2_CFG, SIGLIP2_PREPROCESS)


GEMMA_SPECIALS = ("<pad>", "<eos>", "<bos>", "<unk>")  # Gemma's ids 0-3


def gemma_like_tokenizer(vocab: int):
    """A BPE tokenizer set as Gemma's (spaces as "▁", no pre-tokenizer, <bos> first, pad id 0), trained on a few
    sentences to at most ``vocab`` tokens, wrapped for transformers."""
    import string

    from tokenizers import Tokenizer, models, normalizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    core = Tokenizer(models.BPE(unk_token="<unk>"))
    core.normalizer = normalizers.Replace(" ", "▁")
    alphabet = [*string.ascii_letters, *string.digits, *string.punctuation, "▁"]
    trainer = trainers.BpeTrainer(vocab_size=vocab, special_tokens=list(GEMMA_SPECIALS), initial_alphabet=alphabet,
                                  show_progress=False)
    core.train_from_iterator(["a person opens a box on a table", "two people walking past the fountain at noon",
                              "a hand holding a cup", "the dog runs on the beach"], trainer)
    core.post_processor = processors.TemplateProcessing(single="<bos> $A", special_tokens=[("<bos>", 2)])
    return PreTrainedTokenizerFast(tokenizer_object=core, pad_token="<pad>", eos_token="<eos>", bos_token="<bos>",
                                   unk_token="<unk>")
