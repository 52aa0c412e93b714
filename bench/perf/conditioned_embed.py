"""How fast an instruction-following embedder makes its vectors: every unit under the generic instruction and each
ConViS concept's, one ``embed_units`` call per instruction (as an index pass makes them).

``--shape tiny`` runs the tiny random checkpoint (bench/tiny/embedding.py) on whatever device there is; ``--shape
7b`` runs Qwen3-VL-Embedding-2B and -8B at their real dimensions with random weights, bf16, on the GPU.  The
dimensions are the released checkpoints' config.json numbers (Qwen/Qwen3-VL-Embedding-2B and -8B, built on
Qwen3-VL-2B and -8B: text Qwen3-1.7B / Qwen3-8B; vision the 24-block 1024-wide / 27-block 1152-wide ViT with
deepstack taps); their output widths, 2048 and 4096, are the published embedding dimensions.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Sequence

import numpy as np

from bench.perf import gpu, real_shape
from bench.perf.config import Footage, PerfConfig, Progress
from bench.perf.sections.embed import ConditionedEmbedResult
from bench.tiny.embedding import build_qwen3_vl_embedding, save_as_embedding

_ROPE = {"rope_type": "default", "rope_theta": 5000000.0, "mrope_section": [24, 20, 20], "mrope_interleaved": True}


def _dimensions(width: int, ffn: int, layers: int, heads: int, vision: tuple[int, int, int], taps: list[int]) -> dict:
    """A Qwen3-VL's dimensions: its Qwen3 text model (8 KV heads of 128) and its ViT (depth, width, MLP width;
    16 heads; deepstack ``taps``), whose merger gives the text width."""
    depth, vision_width, vision_ffn = vision
    return {"text_config": {"hidden_size": width, "intermediate_size": ffn, "num_hidden_layers": layers,
                            "num_attention_heads": heads, "num_key_value_heads": 8, "head_dim": 128,
                            "vocab_size": 151936, "max_position_embeddings": 262144, "rope_parameters": _ROPE},
            "vision_config": {"depth": depth, "hidden_size": vision_width, "intermediate_size": vision_ffn,
                              "num_heads": 16, "out_hidden_size": width, "num_position_embeddings": 2304,
                              "deepstack_visual_indexes": taps}}


REAL_DIMENSIONS: dict[str, dict[str, dict]] = {
    "qwen3-vl-embedding-2b": _dimensions(2048, 6144, 28, 16, (24, 1024, 4096), [5, 11, 17]),
    "qwen3-vl-embedding-8b": _dimensions(4096, 12288, 36, 32, (27, 1152, 4304), [8, 16, 24]),
}


def checkpoint(name: str, folder: Path, shape: str) -> Path:
    """The tiny checkpoint, or (``shape`` "7b") the real dimensions of ``name`` with random bf16 weights."""
    folder = build_qwen3_vl_embedding(folder)
    if shape == "7b":
        import torch
        import transformers

        real_shape.require_cuda()
        config = real_shape.real_config(folder, REAL_DIMENSIONS[name])
        with torch.device("cuda"):
            model = transformers.Qwen3VLModel._from_config(config, dtype=torch.bfloat16)
        save_as_embedding(model, folder)
        del model
        gpu.release()
    return folder


def measure(name: str, folder: Path, clips: Sequence[Path], shape: str) -> ConditionedEmbedResult:
    from indexers.factory import create_indexer
    from retrieval.media.video_decoder import VideoDecoder

    indexer = create_indexer(f"qwen3-vl-embedding:{folder}")
    decoder = VideoDecoder()
    units = [decoder.sample_span(clip, indexer.frame_spec, 0.0, None).pixels for clip in clips]
    told = [None, *indexer.instructions.concepts.values()]
    indexer.embed_units(units[:1])  # warm-up: kernels chosen, caches allocated
    seconds, peak = gpu.timed(lambda: [indexer.embed_units(units, said) for said in told])
    return ConditionedEmbedResult(name, shape, str(indexer.device), len(units), len(told),
                                  int(np.mean([len(u) for u in units])), seconds, peak)


def run_conditioned_embed(config: PerfConfig, footage: Footage, progress: Progress) -> list[ConditionedEmbedResult]:
    """The first eight clips (two in smoke runs), each a unit, under the generic and the five concept
    instructions; the tiny checkpoint, or both real sizes."""
    clips = footage.clips[: 2 if config.smoke else 8]
    names = list(REAL_DIMENSIONS) if config.shape == "7b" else ["qwen3-vl-embedding-tiny"]
    rows = []
    for name in names:
        progress(f"embed: {name} ({config.shape}), {len(clips)} units")
        folder = Path(footage.scratch) / f"embed-{config.shape}-{name}"
        try:
            rows.append(measure(name, checkpoint(name, folder, config.shape), clips, config.shape))
        finally:
            shutil.rmtree(folder, ignore_errors=True)
            gpu.release()  # the model is dropped with ``measure``'s frame: the next one starts on an empty card
    return rows
