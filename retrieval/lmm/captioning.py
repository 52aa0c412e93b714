"""Asking a video LMM about units: its caption and descriptions of each unit, read back as stored text.

Each unit is decoded with the model's own frames, then every question of every unit is asked in one
``describe_each`` where the model has it (a transformers family: every question of a batch of units in one
generation), else each request of every unit lacking its answer in one ``describe_many``. A unit that cannot be
decoded or answered says why and is left for a later run; an answer that is not usable text is kept as unreadable,
with the reason.
"""

from __future__ import annotations

import functools
import time
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Iterator, Protocol, Sequence

import numpy as np

from retrieval.core.errors import one_line
from retrieval.core.sampling import FrameSpec
from retrieval.lmm.feed import DEPTH, Distributor, Failed, Feed, ProcessWorkers, guarded
from retrieval.media.video_decoder import VideoDecoder

MAX_CHARS = 2000  # a longer answer is a model running on, not a description: stored as unreadable
# ... unless its budget allows more: the reference's 1024-token captions run to 5,000 characters
CHARS_PER_TOKEN = 6


def answer_limit(max_new_tokens: int) -> int:
    """The most characters an answer of up to ``max_new_tokens`` tokens is stored with."""
    return max(MAX_CHARS, CHARS_PER_TOKEN * int(max_new_tokens))


class Describer(Protocol):
    """A model that answers a request about one video: every reranker family is one."""

    model_id: str
    revision: str
    describe_version: str
    frame_spec: FrameSpec
    caption_tokens: int | None  # new tokens the caption request gets (None: the request's default)

    def describe(self, frames: np.ndarray, prompt: str, max_new_tokens: int, prepared: bool = False) -> str: ...

    def describe_many(self, videos: Sequence[np.ndarray], prompt: str, max_new_tokens: int,
                      prepared: bool = False) -> list[str]: ...


class Unit(Protocol):
    """A unit to describe (a catalog's ``UnitRow``): its file, relative to the index's root, and its span."""

    path: str
    start: float
    end: float


@dataclass(frozen=True)
class Answer:
    text: str | None
    status: str = "ok"
    error: str | None = None


def read_answer(raw, max_chars: int = MAX_CHARS) -> Answer:
    """An answer as stored: clean text, or "unreadable" with the reason (never an exception)."""
    if not isinstance(raw, str):
        return Answer(None, "unreadable", f"not text: {type(raw).__name__}")
    # control characters (a model emitting raw bytes) say nothing and break terminals; newlines stay
    text = "".join(c for c in raw if c in "\n\t" or unicodedata.category(c)[0] != "C").strip()
    if not text:
        return Answer(None, "unreadable", "empty answer")
    if len(text) > max_chars:
        return Answer(None, "unreadable", f"{len(text)} characters, more than {max_chars}")
    return Answer(text)


Requests = dict[str, tuple[str, int]]  # key -> (request, max new tokens), asked in this order


@dataclass(frozen=True)
class Described:
    """One unit's answers to the requests it lacked, or why there are none (``reason``), and what it cost."""

    unit: Unit
    answers: dict[str, Answer] | None
    reason: str | None = None
    calls: int = 0
    seconds: float = 0.0


Work = list[tuple[Unit, Requests]]  # each unit with the requests it lacks answers to
Mapper = Callable[[Work], Iterable[Described]]  # the model's answers, unit by unit, in any order


def describe_units(model: Describer, decoder: VideoDecoder, root: Path, work: Work) -> list[Described]:
    """Decode each unit with the model's own frames, then ask what each unit lacks: every question of every unit
    in wide generations where the model can (``describe_each``), else each request of every unit lacking it in one
    ``describe_many`` (the family batches what it can); never raises: a unit that failed says why."""
    decode = functools.partial(decode_unit, decoder, Path(root), model.frame_spec)
    return answered(model, work, [guarded(decode, unit) for unit, _ in work])


def decode_unit(decoder: VideoDecoder | None, root: Path, spec: FrameSpec, unit: Unit) -> np.ndarray:
    """The unit's frames as ``spec`` samples and sizes them (``decoder`` None: this process's own, made once: a
    decode worker's)."""
    return (decoder or _own_decoder()).sample_span(Path(root) / unit.path, spec, unit.start, unit.end).pixels


@functools.lru_cache(maxsize=1)
def _own_decoder() -> VideoDecoder:
    return VideoDecoder()


def answered(model: Describer, work: Work, decoded: Sequence[np.ndarray | Failed], ready=None) -> list[Described]:
    """Ask each unit of ``work`` its requests about its decoded frames (a ``Failed`` decode says why instead);
    ``ready``: the model's ``describe_inputs`` for the decoded units, made ahead."""
    pixels = {i: frames for i, frames in enumerate(decoded) if not isinstance(frames, Failed)}
    failed = {i: f"not decoded ({frames.reason})" for i, frames in enumerate(decoded) if isinstance(frames, Failed)}
    ask = _ask_together if callable(getattr(model, "describe_each", None)) else _ask_by_request
    if ready is not None:  # made by ``describe_inputs`` for ``describe_each``
        ask = functools.partial(_ask_together, ready=ready)
    answers, seconds = ask(model, pixels, work, failed)
    return [Described(unit, None, failed[i]) if i in failed else
            Described(unit, answers[i], None, len(answers[i]), seconds[i]) for i, (unit, _) in enumerate(work)]


Asked = tuple[dict[int, dict[str, Answer]], dict[int, float]]  # each unit's answers, and its share of the seconds


def _ask_by_request(model: Describer, pixels: dict[int, np.ndarray], work: Work, failed: dict[int, str]) -> Asked:
    """Each request of every unit lacking it in one ``describe_many``."""
    answers: dict[int, dict[str, Answer]] = {i: {} for i in pixels}
    seconds = {i: 0.0 for i in pixels}
    keys = list(dict.fromkeys(k for _, requests in work for k in requests))
    for key in keys:
        asked = [i for i in pixels if key in work[i][1] and i not in failed]
        if not asked:
            continue
        request, tokens = work[asked[0]][1][key]
        started = time.perf_counter()
        try:
            raws = model.describe_many([pixels[i] for i in asked], request, tokens, prepared=True)
        except Exception as exc:  # out of memory, mostly: nothing stored for these units, a later run asks again
            failed.update({i: f"model error ({one_line(exc, 200)})" for i in asked})
            continue
        share = (time.perf_counter() - started) / len(asked)
        for i, raw in zip(asked, raws, strict=False):
            answers[i][key], seconds[i] = read_answer(raw, answer_limit(tokens)), seconds[i] + share
    return answers, seconds


def _ask_together(model, pixels: dict[int, np.ndarray], work: Work, failed: dict[int, str], ready=None) -> Asked:
    """Every request of every unit in ``describe_each`` (all of a unit's questions beside its video), its inputs
    ``ready`` where made ahead; a unit's share of the seconds is its share of the answers."""
    asked = [i for i in pixels if work[i][1]]
    answers: dict[int, dict[str, Answer]] = {i: {} for i in pixels}
    seconds = {i: 0.0 for i in pixels}
    if not asked:
        return answers, seconds
    started = time.perf_counter()
    try:
        more = {} if ready is None else {"ready": ready}  # a describer that makes no inputs ahead takes none
        raws = model.describe_each([pixels[i] for i in asked], [list(work[i][1].values()) for i in asked],
                                   prepared=True, **more)
    except Exception as exc:  # out of memory, mostly: nothing stored for these units, a later run asks again
        failed.update({i: f"model error ({one_line(exc, 200)})" for i in asked})
        return answers, seconds
    per_answer = (time.perf_counter() - started) / sum(len(work[i][1]) for i in asked)
    for i, texts in zip(asked, raws, strict=True):
        for (key, (_, tokens)), raw in zip(work[i][1].items(), texts, strict=True):
            answers[i][key] = read_answer(raw, answer_limit(tokens))
        seconds[i] = per_answer * len(texts)
    return answers, seconds


class LocalDescriber:
    """The mapper of a local run: this process asks the model, the model's ``batch_size`` units at a time (what
    a run killed mid-way can lose), while the next batches are decoded (``retrieval.lmm.feed``): by
    ``distributor``'s worker processes when given, else, for a model on a GPU with no ``decoder`` chosen, by
    ``FEED_WORKERS`` processes of its own (they decode with their own decoder), else by a thread here (a model on
    the CPU takes its cores itself)."""

    def __init__(self, model: Describer, root: Path, decoder: VideoDecoder | None = None,
                 distributor: Distributor | None = None, depth: int = DEPTH):
        self.model, self.root, self.decoder = model, Path(root), decoder or VideoDecoder()
        self.distributor, self.depth = distributor, depth
        self.own_workers = distributor is None and decoder is None and _on_gpu(model)

    def __call__(self, work: Work) -> Iterator[Described]:
        size = max(1, int(getattr(self.model, "batch_size", 1)))
        batches = [work[start:start + size] for start in range(0, len(work), size)]
        distributor = ProcessWorkers(FEED_WORKERS) if self.own_workers else self.distributor
        decoder = None if distributor is not None else self.decoder  # a worker's own, else this one
        decode = functools.partial(decode_unit, decoder, self.root, self.model.frame_spec)
        # the feed's items are the work's (unit, requests); the model's processor work is done ahead where it can be
        collate = functools.partial(_inputs, self.model) if callable(getattr(self.model, "describe_inputs", None)) \
            else None
        fed = Feed(functools.partial(_first, decode), collate, distributor=distributor, depth=self.depth)(batches)
        try:
            for ready in fed:
                yield from answered(self.model, ready.items, ready.values, ready.inputs)
        finally:
            fed.close()  # the feed's thread first: it may be waiting on the workers
            if self.own_workers:
                distributor.close()


FEED_WORKERS = 2  # decode processes of a GPU describe run: a batch of units decodes well within a batch's generation


def _on_gpu(model) -> bool:
    return getattr(getattr(model, "device", None), "type", None) == "cuda"


def _first(decode: Callable[[Unit], np.ndarray], task: tuple[Unit, Requests]) -> np.ndarray:
    return decode(task[0])


def _inputs(model, work: Work, pixels: list[np.ndarray]):
    """``describe_each``'s inputs for the decoded units of a batch, as ``_ask_together`` will ask them."""
    return model.describe_inputs(pixels, [list(requests.values()) for _, requests in work], prepared=True)
