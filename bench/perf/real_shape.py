"""Checkpoints of the real models' shape with random weights: what a GPU measurement needs and no download.

Each family's tiny builder (bench/tiny/vlm.py) writes the tokenizer, processor and chat template, at the real
frame size where the family's processor takes one (LLaVA-OneVision's SigLIP 384 px, InternVL's 448 px; Qwen's
video processor keeps its own pixel budget); the model is then rebuilt from that config with the real models'
dimensions below, in bf16 straight on the GPU (``_from_config`` under ``torch.device("cuda")``), and saved over
the tiny weights. The compute of a pair (tokens, layers, widths, vocabulary) is the real model's; the answers
are noise. The token ids stay the tiny tokenizer's, all inside the real vocabulary.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Callable, Iterator

from bench.tiny import vlm
from retrieval.core.errors import ConvisError

SHAPES = ("tiny", "7b")
NAMES = {"real": "7b"}  # another word a run may use for a shape


def canonical(shape: str) -> str:
    """The shape a name stands for ("real" is "7b"); an unknown name as it is (``SHAPES`` refuses it)."""
    return NAMES.get(shape, shape)

# The released checkpoints' config.json numbers (transformers' config classes name the keys):
#   Qwen2.5-VL 7B: Qwen/Qwen2.5-VL-7B-Instruct (text: Qwen2.5-7B; vision: the 32-block, 1280-wide ViT with
#     window attention, full attention in blocks 7, 15, 23, 31)
#   LLaVA-OneVision 7B: llava-hf/llava-onevision-qwen2-7b-ov-hf (text: Qwen2-7B; vision: SigLIP so400m-patch14-384)
#   InternVL 8B: OpenGVLab/InternVL3-8B-hf (text: Qwen2.5-7B; vision: InternViT-300M-448px)
#   Qwen3-VL 8B: Qwen/Qwen3-VL-8B-Instruct (text: 36 layers of 4096, 128-wide heads, interleaved M-RoPE 24/20/20;
#     vision: the 27-block, 1152-wide ViT, patches of 16, deepstack from blocks 8, 16, 24)
_QWEN2_7B_TEXT = {"hidden_size": 3584, "intermediate_size": 18944, "num_hidden_layers": 28,
                  "num_attention_heads": 28, "num_key_value_heads": 4, "max_position_embeddings": 32768,
                  "rope_parameters": {"rope_type": "default", "rope_theta": 1000000.0}}
REAL_DIMENSIONS: dict[str, dict[str, dict]] = {
    "qwen2.5-vl-7b": {
        "text_config": {**_QWEN2_7B_TEXT, "vocab_size": 152064,  # M-RoPE: 128-wide heads split 16/24/24
                        "rope_parameters": {"rope_type": "default", "rope_theta": 1000000.0,
                                            "mrope_section": [16, 24, 24]}},
        "vision_config": {"depth": 32, "hidden_size": 1280, "intermediate_size": 3420, "num_heads": 16,
                          "out_hidden_size": 3584, "window_size": 112, "fullatt_block_indexes": [7, 15, 23, 31]},
    },
    "llava-onevision-7b": {
        "text_config": {**_QWEN2_7B_TEXT, "vocab_size": 152128},
        "vision_config": {"hidden_size": 1152, "intermediate_size": 4304, "num_hidden_layers": 26,
                          "num_attention_heads": 16, "image_size": 384, "patch_size": 14},
    },
    "internvl-8b": {
        "text_config": {**_QWEN2_7B_TEXT, "vocab_size": 151674},
        "vision_config": {"hidden_size": 1024, "intermediate_size": 4096, "num_hidden_layers": 24,
                          "num_attention_heads": 16, "image_size": [448, 448], "patch_size": [14, 14]},
    },
    "qwen3-vl-8b": {
        "text_config": {"hidden_size": 4096, "intermediate_size": 12288, "num_hidden_layers": 36,
                        "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128,
                        "max_position_embeddings": 262144, "vocab_size": 151936,
                        "rope_parameters": {"rope_type": "default", "rope_theta": 5000000.0,
                                            "mrope_section": [24, 20, 20], "mrope_interleaved": True}},
        "vision_config": {"depth": 27, "hidden_size": 1152, "intermediate_size": 4304, "num_heads": 16,
                          "out_hidden_size": 4096, "num_position_embeddings": 2304,
                          "deepstack_visual_indexes": [8, 16, 24]},
    },
}

# family -> (the tiny builder at the family's real frame size, the shape's name in REAL_DIMENSIONS)
_BUILDERS: dict[str, tuple[Callable[[Path], Path], str]] = {
    "qwen2.5-vl": (lambda folder: vlm.build_qwen_vl(folder, model_type="qwen2_5_vl"), "qwen2.5-vl-7b"),
    "llava-onevision": (lambda folder: vlm.build_llava_onevision(folder, image_size=384), "llava-onevision-7b"),
    "internvl": (lambda folder: vlm.build_internvl(folder, image_size=448), "internvl-8b"),
    "qwen3-vl": (vlm.build_qwen3_vl, "qwen3-vl-8b"),
}
FAMILIES = tuple(_BUILDERS)


class NeedsCuda(ConvisError, RuntimeError):
    """The real-shape checkpoints are built and run on a GPU only."""

    exit_code, http_status = 2, 400


def require_cuda() -> None:
    import torch

    if not torch.cuda.is_available():
        raise NeedsCuda("--shape 7b builds 7-8B checkpoints on the GPU and this machine has no CUDA device; "
                        "use --shape tiny (the default) here")


def each_checkpoint(shape: str, scratch: Path, progress: Callable[[str], None], what: str
                    ) -> Iterator[tuple[str, Path]]:
    """(family, checkpoint folder) of every family at ``shape``, one at a time: each folder is removed once the
    caller moves on (a 7b checkpoint is 16 GB of disk)."""
    if shape == "7b":
        require_cuda()
    for family in FAMILIES:
        progress(f"{what}: {family} ({shape})")
        folder = build(family, Path(scratch) / f"lmm-{shape}-{family}", shape)
        try:
            yield family, folder
        finally:
            shutil.rmtree(folder, ignore_errors=True)


def build(family: str, folder: Path, shape: str) -> Path:
    """The checkpoint folder of ``family`` at ``shape`` ("tiny": the tiny builder's, on the CPU; "7b": the real
    dimensions, bf16, built on the GPU)."""
    builder, real = _BUILDERS[family]
    folder = builder(Path(folder))
    if shape == "7b":
        _real_weights(folder, REAL_DIMENSIONS[real])
    return folder


_DERIVED = ("head_dim", "layer_types", "max_window_layers")  # per-layer and per-head values of the tiny widths


def real_config(folder: Path, dimensions: dict[str, dict]):
    """The tiny checkpoint's config (token ids, processor-facing settings) with the real dimensions."""
    import transformers

    config = transformers.AutoConfig.from_pretrained(folder)
    data = config.to_dict()
    for part, values in dimensions.items():
        # values derived from the tiny widths (a head's width) are derived again from the real ones
        data[part] = {k: v for k, v in data[part].items() if k not in _DERIVED} | values
    return type(config).from_dict(data)


def _real_weights(folder: Path, dimensions: dict[str, dict]) -> None:
    import torch
    import transformers

    require_cuda()
    config = real_config(folder, dimensions)
    model_class = getattr(transformers, config.architectures[0])
    with torch.device("cuda"):
        model = model_class._from_config(config, dtype=torch.bfloat16)
    tiny = transformers.GenerationConfig.from_pretrained(folder)
    model.generation_config.pad_token_id, model.generation_config.eos_token_id = tiny.pad_token_id, tiny.eos_token_id
    model.save_pretrained(folder)
    del model
    torch.cuda.empty_cache()
