"""Greedy decoding of many rows over a key/value cache that already holds their prompts, with no host work a token.

``model.generate`` does per token what a card waiting on the host feels: it syncs with the host to ask whether every
row is done, rebuilds its inputs in Python, and grows the attention mask and (with the dynamic cache) every layer's
keys and values by concatenation, a copy of the whole cache a step. This loop keeps each row's tokens, attention
mask and next position in buffers allocated once, picks tokens on the device, and asks the host whether every row is
done once every ``CHECK_EVERY`` tokens only (a finished row is padded meanwhile, as ``generate`` pads it).

Its answers are ``generate``'s: the same logits processors over the same tokens (a checkpoint's repetition penalty
applies), the argmax, a row done at an end token or its own budget, a finished row padded.

The ``Decoding`` says which cache: the dynamic one (the default), or a static one (``cache_implementation
="static"`` in ``generate``'s words) of fixed, bucketed shape, its decode step compiled once a bucket where asked
(transformers' ``get_compiled_call``, the ``CompileConfig`` ``generate`` would use; inductor's cache kept beside the
model cache, so a later run reads the compiled kernels instead of compiling again).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

CHECK_EVERY = 8  # tokens between the host's looks at whether every row is done (each look is a sync)
# a static cache's shape is bucketed, so most batches reuse one compiled step: its rows a power of two (at least
# ROWS; spare rows repeat the first), its length a multiple of LENGTH_BUCKET
ROWS = 8
LENGTH_BUCKET = 512
KEPT_CACHES = 2  # static caches kept for reuse (a compiled step is bound to its cache's tensors)
COMPILED_SHAPES = 32  # compiled steps dynamo keeps (rows x lengths buckets) before it gives up and runs eagerly


@dataclass(frozen=True)
class Decoding:
    """How a batch is decoded: ``static``: a static key/value cache of bucketed shape, filled in place (no copy of
    the cache a step); ``compiled``: its decode step compiled (static cache only), once a bucket shape."""

    static: bool = False
    compiled: bool = False

    def __post_init__(self):
        if self.compiled and not self.static:
            raise ValueError("a compiled decode step needs the static cache (its shapes fixed)")

    def rows(self, rows: int) -> int:
        """Rows the cache holds for ``rows`` rows."""
        return max(ROWS, 1 << (rows - 1).bit_length()) if self.static else rows

    def length(self, tokens: int) -> int:
        """Positions the cache holds for ``tokens`` tokens."""
        return -(-tokens // LENGTH_BUCKET) * LENGTH_BUCKET if self.static else tokens


@dataclass
class Rows:
    """The rows being decoded: every token so far (what the logits processors read), the attention mask over the
    cache's positions, each row's next position (one value a row: M-RoPE's three axes advance together for text),
    and how many positions are filled."""

    tokens: Any  # (rows, prompt + new tokens)
    mask: Any  # (rows, cache length)
    next_position: Any  # (rows,)
    filled: int  # tokens[:, :filled] and mask[:, :filled] are written


def static_cache(model, config, rows: int, length: int):
    """A static cache of ``rows`` x ``length``, emptied; one kept on the model a shape, so a compiled step sees the
    same tensors again and does not compile again."""
    from transformers import StaticCache

    kept = model.__dict__.setdefault("_static_caches", {})
    key = (rows, length)
    cache = kept.pop(key, None)
    if cache is None:
        cache = StaticCache(config=config, max_cache_len=length)
        while len(kept) >= KEPT_CACHES:
            kept.pop(next(iter(kept)))
    else:
        cache.reset()
    kept[key] = cache
    return cache


def fill_static(cache, filled) -> None:
    """Copy a filled dynamic cache's keys and values (its rows already the static cache's rows) into ``cache``."""
    for static_layer, layer in zip(cache.layers, filled.layers, strict=True):
        static_layer.update(layer.keys, layer.values)


def compile_cache_folder() -> Path:
    """Where inductor keeps compiled kernels: beside the Hugging Face cache, unless the user chose a folder."""
    from huggingface_hub import constants

    return Path(os.environ.get("TORCHINDUCTOR_CACHE_DIR") or Path(constants.HF_HOME) / "torch-compile")


def compiled_forward(network) -> Callable:
    """``network``'s forward compiled for the decode step: the checkpoint's ``compile_config`` or transformers'
    default (on CUDA: CUDA graphs), fixed shapes; inductor's cache beside the model cache."""
    import torch
    from transformers import CompileConfig

    os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", str(compile_cache_folder()))
    torch._dynamo.config.cache_size_limit = max(torch._dynamo.config.cache_size_limit, COMPILED_SHAPES)
    config = getattr(network.generation_config, "compile_config", None) or CompileConfig()
    if network.device.type != "cuda" and config.mode == "reduce-overhead":
        config = CompileConfig(fullgraph=config.fullgraph, dynamic=False, backend=config.backend, mode="default")
    return network.get_compiled_call(config)


def greedy(step: Callable, logits, rows: Rows, budgets: list[int], processors, end_ids, pad_id: int) -> Any:
    """Tokens (rows, max budget) decoded greedily from ``logits``, the first new token's (rows, vocabulary), then
    ``step(tokens (rows, 1), positions (rows,), rows)`` the next token's logits (``rows`` already covering that
    token). Row i keeps ``budgets[i]`` tokens; the rest of its row is padding."""
    import torch

    device, count = logits.device, len(budgets)
    most = max(budgets)
    limits = torch.tensor(budgets, device=device)
    ends = torch.tensor(end_ids, device=device)
    done = torch.zeros(count, dtype=torch.bool, device=device)
    out = torch.full((count, most), pad_id, dtype=torch.long, device=device)
    for t in range(most):
        scores = logits.float()
        if processors:
            scores = processors(rows.tokens[:, :rows.filled], scores)
        token = torch.where(done, pad_id, scores.argmax(dim=-1))
        out[:, t] = token
        done |= torch.isin(token, ends) | (limits <= t + 1)
        rows.tokens[:, rows.filled] = token
        rows.mask[:, rows.filled] = 1
        rows.filled += 1
        if t + 1 == most or ((t + 1) % CHECK_EVERY == 0 and bool(done.all())):
            break
        logits = step(token[:, None], rows.next_position + t, rows)
    return out
