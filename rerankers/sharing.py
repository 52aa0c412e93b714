"""What pairs that share an anchor share: runs of pairs with one anchor, a cache keyed by the frames' identity, and
what a kept score's key says of sharing.

A query asks N candidates against one anchor, once per concept; the anchor's frames (and each candidate's) are the
same objects every time (``retrieval.lmm.clips.FrameCache`` hands them out), so work done on them once, such as a
vision tower's output, can be kept by the identity of those frames and reused.
"""

from __future__ import annotations

import copy
import inspect
from collections import OrderedDict
from typing import Any, Callable, Generic, Hashable, Sequence, TypeVar

import numpy as np

Value = TypeVar("Value")

WORK_KEYS = ("vision_calls", "prefix_passes", "pair_passes")  # what ``Reranker.work`` counts, in report order
UNSHARED_KEY = "|share=off"


def sharing_key(share: bool) -> str:
    """What a cached pair score's tag says of anchor sharing: a shared prefix and vision output give numbers a
    whole forward pass a pair does not quite give, so a score kept with sharing off is kept apart. Sharing on is
    the default and adds nothing, so the scores kept before sharing was recorded are still found."""
    return "" if share else UNSHARED_KEY


def anchor_runs(pairs: Sequence[tuple[Any, Any]]) -> list[tuple[int, int]]:
    """(start, stop) of each run of consecutive pairs whose video 1 is the same object."""
    runs: list[tuple[int, int]] = []
    start = 0
    for i in range(1, len(pairs) + 1):
        if i == len(pairs) or pairs[i][0] is not pairs[start][0]:
            runs.append((start, i))
            start = i
    return runs


class IdentityCache(Generic[Value]):
    """Values kept by the identity of an array (and a hashable detail), the least recently used dropped first.

    Each entry holds its array, so the array's id cannot be reused by another while the entry lives: a hit is
    always the same object, never a newer one at a freed address.
    """

    def __init__(self, size: int):
        self.size = max(1, int(size))
        self._entries: OrderedDict[tuple[int, Hashable], tuple[np.ndarray, Value]] = OrderedDict()

    def get(self, frames: np.ndarray, detail: Hashable, make: Callable[[], Value]) -> Value:
        key = (id(frames), detail)
        entry = self._entries.get(key)
        if entry is not None and entry[0] is frames:
            self._entries.move_to_end(key)
            return entry[1]
        value = make()
        self._entries[key] = (frames, value)
        self._entries.move_to_end(key)
        while len(self._entries) > self.size:
            self._entries.popitem(last=False)
        return value

    def peek(self, frames: np.ndarray, detail: Hashable) -> Value | None:
        """The kept value, or None; the entry's age is left as it is."""
        entry = self._entries.get((id(frames), detail))
        return entry[1] if entry is not None and entry[0] is frames else None

    def clear(self) -> None:
        self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)


# -- a prompt prefix's key/value cache, shared over a batch (``Reranker._shared_tokens``, rerankers.unit_prefix) -----
def cache_argument(model) -> str:
    """The forward keyword that takes a key/value cache: ``cache`` in newer transformers, ``past_key_values`` before."""
    # the class's forward: an instance's may be wrapped (accelerate's device hooks) and hide its parameters
    return "cache" if "cache" in inspect.signature(type(model).forward).parameters else "past_key_values"


def returned_cache(out):
    """The key/value cache a forward pass returned, whichever name this transformers gives it."""
    cache = getattr(out, "cache", None)
    return cache if cache is not None else out.past_key_values


def expanded_cache(cache, rows: int):
    """A copy of a one-row prefix cache repeated over ``rows`` rows: the next pass appends to it, the prefix stays."""
    copied = copy.deepcopy(cache)
    copied.batch_repeat_interleave(rows)
    return copied


def first_token_processors(model, config, input_ids, attention_mask):
    """The logits processors ``model.generate`` applies before choosing the first new token under ``config`` (a
    checkpoint's repetition penalty, say): a forward pass read by hand then picks the token generate would."""
    config = copy.deepcopy(config)  # preparing special tokens writes tensors into the config
    model._prepare_special_tokens(config, True, device=input_ids.device)
    return model._get_logits_processor(generation_config=config, input_ids_seq_length=input_ids.shape[1],
                                       encoder_input_ids=input_ids, prefix_allowed_tokens_fn=None,
                                       logits_processor=None, device=input_ids.device,
                                       model_kwargs={"attention_mask": attention_mask})
