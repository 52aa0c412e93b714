"""Every question of a unit after one pass over its video: the vision tower and the prompt up to the video's end run
once a unit, and its caption and concept questions are decoded as rows after that prefix (as the pairs of one anchor
share its prefix, ``Reranker._shared_tokens``).

A describe chat reads the same up to the video's last token whatever the request (the family's system message, the
user turn's start, the video); only the request and the assistant turn's start follow. A batch of units runs:

1. the prefixes, one row a unit (left-padded), each video's vision output computed once (one vision-tower call for
   the batch's videos);
2. the cache's rows picked for the questions, each question a row after its unit's prefix;
3. the requests' tokens, right-aligned after their prefix (the padding between is masked), at the positions they
   take in the whole prompt: the first new token's logits;
4. greedy decoding (``rerankers.decoding``), on the dynamic cache or a static one.

Each row's tokens and positions are those of its whole prompt, so its answer is the unshared generation's.
A family shares when it can cut its describe prompt after the video (``_split_request``) and run a prefix of
several videos (``_unit_prefix``, ``_prefix_forward``): Qwen2-VL, Qwen2.5-VL and Qwen3-VL.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from rerankers.decoding import Decoding, Rows, compiled_forward, fill_static, greedy, static_cache
from rerankers.sharing import cache_argument, first_token_processors, returned_cache

Unit = tuple[np.ndarray, list[tuple[str, int]]]  # a clip and its questions ((request, max new tokens) each)


@dataclass(frozen=True)
class Prefix:
    """A unit's prompt up to its video's end: token ids (length,) and the model's positions (axes, length)."""

    ids: Any
    positions: Any


@dataclass
class Batch:
    """The units' prefixes run: their cache (a row a unit), ids and mask (units, width), each one's last token's
    position and its highest position (M-RoPE: a video's time axis may run past the text after it), and how many
    axes a position has."""

    cache: Any
    mask: Any
    ids: Any
    last: Any
    highest: Any
    axes: int


def generate_shared(model, units: Sequence[Unit], decoding: Decoding) -> list[list[str]] | None:
    """Each unit's questions answered greedily after one pass over its video; None where the family cannot share
    (no cut after the video, or requests whose prompts differ before it)."""
    import torch

    cuts = [model._split_request(request) for _, asked in units for request, _ in asked]
    if not cuts or any(cut is None for cut in cuts) or len({head for head, _ in cuts}) != 1:
        return None
    prefixes = [model._unit_prefix(clip, cuts[0][0]) for clip, _ in units]
    if any(prefix is None for prefix in prefixes):
        return None
    tails = iter(model._tail_ids(tail) for _, tail in cuts)
    rows = [(u, next(tails), int(tokens)) for u, (_, asked) in enumerate(units) for _, tokens in asked]
    with torch.inference_mode():
        batch = _prefix_batch(model, [clip for clip, _ in units], prefixes)
        tokens = _decode_rows(model, batch, rows, decoding)
    decode = model.processor.tokenizer.decode
    texts = iter(decode(row[:budget].tolist(), skip_special_tokens=True).strip()
                 for row, (_, _, budget) in zip(tokens.cpu(), rows, strict=False))
    return [[next(texts) for _ in asked] for _, asked in units]


def _prefix_batch(model, clips: list[np.ndarray], prefixes: list[Prefix]) -> Batch:
    """One forward pass over every unit's prefix (left-padded): the cache, mask, ids and last positions."""
    import torch

    width, axes = max(len(p.ids) for p in prefixes), prefixes[0].positions.shape[0]
    device = model.device
    ids = torch.full((len(prefixes), width), _prompt_pad(model), dtype=torch.long, device=device)
    positions = torch.zeros((axes, len(prefixes), width), dtype=torch.long, device=device)
    mask = torch.zeros((len(prefixes), width), dtype=torch.long, device=device)
    for u, prefix in enumerate(prefixes):
        n = len(prefix.ids)
        ids[u, width - n:], positions[:, u, width - n:], mask[u, width - n:] = prefix.ids, prefix.positions, 1
    out = model._prefix_forward(ids, clips, _model_positions(positions), mask)
    last = torch.stack([p.positions[:, -1].max() for p in prefixes]).to(device)
    highest = torch.stack([p.positions.max() for p in prefixes]).to(device)
    model.work["prefix_passes"] += len(prefixes)
    return Batch(returned_cache(out), mask, ids, last, highest, axes)


def _decode_rows(model, batch: Batch, rows: list[tuple[int, Any, int]], decoding: Decoding):
    """The questions' rests after their prefixes, then greedy decoding: the new tokens (rows, max budget)."""
    import torch

    spare = decoding.rows(len(rows)) - len(rows)
    rows = rows + [(rows[0][0], rows[0][1], 1)] * spare  # a static cache's spare rows: the first, one token long
    units = torch.tensor([u for u, _, _ in rows], device=model.device)
    width, rest = batch.ids.shape[1], max(len(ids) for _, ids, _ in rows)
    budgets = [budget for _, _, budget in rows]
    length = decoding.length(width + rest + max(budgets))
    state, rest_ids, rest_positions = _rows(model, batch, rows, units, length)
    cache = batch.cache
    cache.batch_select_indices(units)
    if decoding.static:
        cache, filled = static_cache(model.model, model.model.config, len(rows), length), cache
        fill_static(cache, filled)
    forward = compiled_forward(model.model) if decoding.compiled else model.model
    kwargs = {cache_argument(model.model): cache, "use_cache": True, "logits_to_keep": 1}

    def mask(rows_now: Rows):
        return rows_now.mask if decoding.static else rows_now.mask[:, :rows_now.filled]

    def step(token, position, rows_now: Rows):
        where = position.view(1, -1, 1).expand(rest_positions.shape[0], -1, 1)
        return forward(input_ids=token, position_ids=_model_positions(where), attention_mask=mask(rows_now),
                       **kwargs).logits[:, -1]

    logits = model.model(input_ids=rest_ids, position_ids=_model_positions(rest_positions), attention_mask=mask(state),
                         **kwargs).logits[:, -1]
    model.work["pair_passes"] += len(rows) - spare
    config = model._text_config(max(budgets))
    prompt = state.tokens[:, :state.filled]
    processors = first_token_processors(model.model, config, prompt, state.mask[:, :state.filled])
    tokens = greedy(step, logits, state, budgets, processors, _end_ids(config), _pad_id(config))[:len(rows) - spare]
    # what a spy on ``generate`` would count for the same rows: the new tokens written, a finished row's padding not
    model.work.update(unit_batches=1, new_tokens=int((tokens != _pad_id(config)).sum()))
    return tokens


def _rows(model, batch: Batch, rows: list[tuple[int, Any, int]], units, length: int) -> tuple[Rows, Any, Any]:
    """The decoding state after each row's prompt (its prefix, padding, its request's tokens right-aligned), and
    the requests' ids (rows, rest) and positions (axes, rows, rest)."""
    import torch

    width, rest = batch.ids.shape[1], max(len(ids) for _, ids, _ in rows)
    most = max(budget for _, _, budget in rows)
    device, count = model.device, len(rows)
    tokens = torch.full((count, width + rest + most), _prompt_pad(model), dtype=torch.long, device=device)
    mask = torch.zeros((count, length), dtype=torch.long, device=device)
    tokens[:, :width], mask[:, :width] = batch.ids[units], batch.mask[units]
    # the request's tokens go on the text after the video (its end token is the prefix's last); a new token comes
    # after the highest position of the prompt, as generate places it
    positions = torch.zeros((count, rest), dtype=torch.long, device=device)
    for r, (u, ids, _) in enumerate(rows):
        n = len(ids)
        tokens[r, width + rest - n:width + rest], mask[r, width + rest - n:width + rest] = ids, 1
        positions[r, rest - n:] = torch.arange(1, n + 1, device=device) + batch.last[u]
    following = torch.maximum(positions[:, -1], batch.highest[units]) + 1
    rest_positions = positions.unsqueeze(0).expand(batch.axes, -1, -1)
    return Rows(tokens, mask, following, width + rest), tokens[:, width:width + rest], rest_positions


def _model_positions(positions):
    """Positions as the model takes them: (axes, rows, length) for M-RoPE, (rows, length) for one axis."""
    return positions[0] if positions.shape[0] == 1 else positions


def _prompt_pad(model) -> int:
    """The id prompts are padded with, as the processor pads them (masked: any id would do but for the logits
    processors, which read the padding as generate's do)."""
    pad = model.processor.tokenizer.pad_token_id
    return int(pad if pad is not None else _pad_id(model._text_config(1)))


def _pad_id(config) -> int:
    """The id a finished row is padded with: generate's (the config's pad, else its first end token)."""
    return int(config.pad_token_id if config.pad_token_id is not None else _end_ids(config)[0])


def _end_ids(config) -> list[int]:
    ends = config.eos_token_id
    return [] if ends is None else [int(e) for e in np.atleast_1d(ends)]
