"""Captions in bulk: every question of many videos in one greedy generation.

A unit's questions (its caption and one request per concept) go in as rows of one ``generate`` call, each row
the unit's video and one request, many units a call, so a decode step serves dozens of answers where the
per-request path served a few. Each row stops at its own token budget (a caption's 256, a concept's 64), so the
text equals what a generation with that row's budget alone would give (greedy decoding never looks ahead).

The default dynamic KV cache is kept unless the model was asked for the static one (``static_cache``, set by
``--captioner-backend hf-static``): on CUDA, transformers' static cache (``cache_implementation="static"``) lets
generate compile its decode step, which took over four minutes for the Qwen2.5-VL 7B shape on an H100 (torch
2.11, transformers 5.17) before its first caption, against 12.5 s for the whole 8-unit run with the dynamic one.
Running out of GPU memory halves the units a call (``HFVideoReranker._fitted``), never splitting a unit.

With anchor sharing on (the default) and a family that cuts its describe prompt after the video (the Qwen-VL
families), a unit's questions are answered after one pass over its video instead (``rerankers.unit_prefix``): one
vision-tower call and one prefix a unit, the questions decoded as rows after it.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from rerankers.decoding import Decoding
from rerankers.unit_prefix import generate_shared

HFVideoReranker = Any  # rerankers.hf's, which imports this module: named here for the reader only
Question = tuple[str, int]  # (request, max new tokens)
STATIC_CACHE_STEP = 512  # the static cache is sized up to a multiple of this, so most calls reuse its shape


def describe_units(model: HFVideoReranker, clips: Sequence[np.ndarray], questions: Sequence[Sequence[Question]],
                   ready: RowInputs | None = None) -> list[list[str]]:
    """``questions[i]`` asked about ``clips[i]`` (each prepared as the family sees one video): the answers, in order.
    ``ready``: ``unit_inputs``' inputs of these very units, made ahead (``retrieval.lmm.feed``); used when the units
    go in one generation, else (more units than a batch, or a batch halved on running out of memory) remade."""
    if len(clips) != len(questions):
        raise ValueError(f"{len(clips)} videos but {len(questions)} question lists")
    units = [(clip, list(asked)) for clip, asked in zip(clips, questions, strict=True) if asked]
    answers = iter(model._fitted(lambda batch: _generate_units(model, batch, ready if batch is units else None),
                                 units, unit="video"))
    return [next(answers) if asked else [] for asked in questions]


def _generate_units(model: HFVideoReranker, units: list[tuple[np.ndarray, list[Question]]],
                    ready: RowInputs | None = None) -> list[list[str]]:
    shared = _generate_shared(model, units) if getattr(model, "share", False) else None
    if shared is not None:
        return shared
    model._made_ahead = ready  # taken by the one generation of exactly these rows
    try:
        texts = iter(generate_rows(model, _rows(units)))
    finally:
        model._made_ahead = None
    return [[next(texts) for _ in asked] for _, asked in units]


def _rows(units: Sequence[tuple[np.ndarray, Sequence[Question]]]) -> list[tuple[np.ndarray, str, int]]:
    return [(clip, request, tokens) for clip, asked in units for request, tokens in asked]


@dataclass
class RowInputs:
    """A generation's inputs as the processor made them (on the host), where each answer starts, each row's budget."""

    inputs: Any
    start: int
    budgets: list[int]


def unit_inputs(model: HFVideoReranker, clips: Sequence[np.ndarray], questions: Sequence[Sequence[Question]],
                processor=None) -> RowInputs | None:
    """``describe_units``' inputs for these units, made by ``processor`` (another thread's copy of the model's: a
    tokenizer is not shared between threads); None when no unit asks anything."""
    rows = _rows([(clip, asked) for clip, asked in zip(clips, questions, strict=True) if asked])
    return row_inputs(model, rows, processor) if rows else None


def row_inputs(model: HFVideoReranker, rows: list[tuple[np.ndarray, str, int]], processor=None) -> RowInputs:
    """The processor's work for ``rows`` of (clip, request, max new tokens), left-padded as ``_generate_with``
    pads."""
    budgets = [int(tokens) for _, _, tokens in rows]
    if min(budgets) < 1:
        raise ValueError("max_new_tokens must be >= 1")
    processor = processor or model.processor
    videos, video_kwargs = model._video_inputs([clip for clip, _, _ in rows])
    texts = [model.render_request(request, processor) for _, request, _ in rows]
    inputs = processor(text=texts, videos=videos, padding=True, padding_side="left", return_tensors="pt",
                       **video_kwargs)
    return RowInputs(inputs, inputs["input_ids"].shape[1], budgets)


def generate_rows(model: HFVideoReranker, rows: list[tuple[np.ndarray, str, int]]) -> list[str]:
    """One generation over ``rows`` of (clip, request, max new tokens), its inputs those ``describe_units`` was
    handed for them where they were made ahead."""
    made, model._made_ahead = getattr(model, "_made_ahead", None) or row_inputs(model, rows), None
    start, budgets = made.start, made.budgets
    config = generation_config(model, max(budgets), start)
    out = _generate_or_fall_back(model, model._to_device(made.inputs), config, RowBudgets(start, budgets))
    decode = model.processor.tokenizer.decode
    return [decode(row[start:start + budget].tolist(), skip_special_tokens=True).strip()
            for row, budget in zip(out, budgets, strict=True)]


def _generate_shared(model: HFVideoReranker, units: list[tuple[np.ndarray, list[Question]]]
                     ) -> list[list[str]] | None:
    """Each unit's questions after one pass over its video (rerankers.unit_prefix); None where the family cannot."""
    import torch

    decoding = unit_decoding(model)
    try:
        return generate_shared(model, units, decoding)
    except torch.cuda.OutOfMemoryError:
        raise  # HFVideoReranker._fitted halves the batch
    except Exception as err:
        if not decoding.static:
            raise
        _static_failed(model, err)
        return generate_shared(model, units, Decoding())


def unit_decoding(model: HFVideoReranker) -> Decoding:
    """How the shared path decodes: what the model was told (``decoding``), else on CUDA the static cache (no
    copy of the cache a token), its step compiled where asked (``static_cache``), else the dynamic cache."""
    told = getattr(model, "decoding", None)
    if getattr(model, "static_cache_failed", False) or (told is None and model.device.type != "cuda"):
        return Decoding()
    if told is not None:
        return told
    return Decoding(static=True, compiled=static_cache_fits(model))


def _generate_or_fall_back(model: HFVideoReranker, inputs: dict, config, budgets: RowBudgets):
    import torch

    try:
        return _generate(model, inputs, config, budgets)
    except torch.cuda.OutOfMemoryError:
        raise  # HFVideoReranker._fitted halves the batch
    except Exception as err:
        if config.cache_implementation != "static":
            raise
        _static_failed(model, err)
        config.cache_implementation = config.max_cache_len = None
        return _generate(model, inputs, config, budgets)


def _static_failed(model: HFVideoReranker, err: Exception) -> None:
    # a model or torch build the static cache (or its compiled decode step) fails on: the dynamic cache answers the
    # same, only slower; said once, and not tried again with this model
    model.static_cache_failed = True
    model._notice(f"{model.name}: the static KV cache failed ({type(err).__name__}); generating with the "
                  "dynamic cache")


def _generate(model: HFVideoReranker, inputs: dict, config, budgets: RowBudgets):
    import torch

    with torch.inference_mode():
        return model.model.generate(**inputs, generation_config=config, stopping_criteria=[budgets])


def generation_config(model: HFVideoReranker, max_new_tokens: int, prompt_tokens: int):
    """The captions' greedy config for ``max_new_tokens``, with the static KV cache where it helps and works."""
    config = copy.deepcopy(model._text_config(max_new_tokens))
    if static_cache_fits(model):
        config.cache_implementation = "static"
        needed = prompt_tokens + max_new_tokens
        config.max_cache_len = -(-needed // STATIC_CACHE_STEP) * STATIC_CACHE_STEP
    return config


def static_cache_fits(model: HFVideoReranker) -> bool:
    """Asked for (``static_cache``), CUDA, and a model transformers can compile with a static cache (every family
    convis runs today)."""
    network = model.model
    if not getattr(model, "static_cache", False) or model.device.type != "cuda" \
            or getattr(model, "static_cache_failed", False):
        return False
    return bool(getattr(network, "_can_compile_fullgraph", False)) \
        and bool(getattr(type(network), "_supports_default_dynamic_cache", lambda: True)())


class RowBudgets:
    """A stopping criterion: each row is done once it has its own number of new tokens (generate pads it after)."""

    def __init__(self, prompt_tokens: int, budgets: list[int]):
        self.prompt_tokens, self.budgets = prompt_tokens, budgets
        self._limits = None

    def __call__(self, input_ids, scores, **kwargs):
        import torch

        if self._limits is None or self._limits.device != input_ids.device:
            self._limits = torch.tensor(self.budgets, device=input_ids.device)
        return (input_ids.shape[1] - self.prompt_tokens) >= self._limits
