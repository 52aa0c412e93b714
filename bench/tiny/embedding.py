"""A tiny, randomly initialised Qwen3-VL-Embedding checkpoint, stored the way the hub stores the real one.

The hub's Qwen3-VL-Embedding checkpoints are a ``Qwen3VLForEmbedding`` (QwenLM/Qwen3-VL-Embedding,
``src/models/qwen3_vl_embedding.py``): a ``Qwen3VLModel`` under the attribute ``model``, so every weight is named
``model.language_model.*`` or ``model.visual.*`` and there is no language-model head.  This builder writes that
layout (a real Qwen3-VL config shrunk, the weights under ``model.``, the architecture named
``Qwen3VLForEmbedding``) with the Qwen3-VL processor (16-pixel patches, merge 2, temporal patch 2, mean and std
0.5) and a byte-level tokenizer with the Qwen chat template, so ``indexers.qwen3_vl_embedding`` loads it through
the same paths as the hub model.
"""

from __future__ import annotations

from pathlib import Path

from bench.tiny.seed import seed_torch
from bench.tiny.vlm import QWEN_CHAT_TEMPLATE, byte_tokenizer

# the real checkpoints' vision tower: 16-pixel patches merged 2x2, frames in pairs; widths shrunk
_VISION = {"depth": 2, "hidden_size": 16, "intermediate_size": 32, "num_heads": 2, "out_hidden_size": 32,
           "patch_size": 16, "spatial_merge_size": 2, "temporal_patch_size": 2, "num_position_embeddings": 64,
           "deepstack_visual_indexes": [0]}
# Qwen3 text: 2 layers of width 32, heads of 16 split for M-RoPE as the real 128-wide ones are (24/20/20)
_TEXT = {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2, "num_attention_heads": 2,
         "num_key_value_heads": 1, "head_dim": 16, "max_position_embeddings": 8192,
         "rope_parameters": {"rope_type": "default", "rope_theta": 5000000.0, "mrope_section": [4, 2, 2],
                             "mrope_interleaved": True}}
ARCHITECTURE = "Qwen3VLForEmbedding"


def embedding_config(tokenizer):
    """The tiny Qwen3-VL config, its token ids the tokenizer's."""
    import transformers

    image_id, video_id, start_id, end_id, pad_id, eos_id = (tokenizer.convert_tokens_to_ids(t) for t in (
        "<|image_pad|>", "<|video_pad|>", "<|vision_start|>", "<|vision_end|>", "<|endoftext|>", "<|im_end|>"))
    vocab = len(tokenizer) + (-len(tokenizer) % 8)
    return transformers.Qwen3VLConfig(
        text_config={**_TEXT, "vocab_size": vocab, "bos_token_id": pad_id, "eos_token_id": eos_id,
                     "pad_token_id": pad_id},
        vision_config=dict(_VISION),
        image_token_id=image_id, video_token_id=video_id, vision_start_token_id=start_id,
        vision_end_token_id=end_id, architectures=[ARCHITECTURE])


def qwen3_vl_processor(tokenizer):
    """Qwen3-VL's processor with its published preprocessing (the transformers classes' defaults)."""
    import transformers

    return transformers.Qwen3VLProcessor(
        image_processor=transformers.Qwen2VLImageProcessor(patch_size=16, image_mean=[0.5] * 3, image_std=[0.5] * 3),
        video_processor=transformers.Qwen3VLVideoProcessor(),
        tokenizer=tokenizer, chat_template=QWEN_CHAT_TEMPLATE)


def save_as_embedding(model, folder: Path) -> None:
    """``model`` (a ``Qwen3VLModel``) saved as the hub's ``Qwen3VLForEmbedding``: weights under ``model.``."""
    from safetensors.torch import save_file

    folder.mkdir(parents=True, exist_ok=True)
    state = {f"model.{name}": tensor.contiguous() for name, tensor in model.state_dict().items()}
    save_file(state, str(folder / "model.safetensors"), metadata={"format": "pt"})
    model.config.architectures = [ARCHITECTURE]
    model.config.save_pretrained(folder)


def build_qwen3_vl_embedding(folder: Path, *, seed: int = 0) -> Path:
    """A tiny Qwen3-VL-Embedding checkpoint folder (config, weights as the hub names them, processor)."""
    import transformers

    folder = Path(folder)
    tokenizer = byte_tokenizer(QWEN_CHAT_TEMPLATE)
    config = embedding_config(tokenizer)
    seed_torch(seed)
    model = transformers.Qwen3VLModel(config).eval()
    save_as_embedding(model, folder)
    qwen3_vl_processor(tokenizer).save_pretrained(folder)
    return folder
