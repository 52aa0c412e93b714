"""Captions in bulk: every question of many units in one generation gives the answers asked one request at a time.

Tiny random fp32 checkpoints of each family (bench/tiny/vlm.py), two clips of different sizes and a third; the
reference is ``describe_many`` asked one request at a time, the path convis used before (and still uses for
captioners that cannot batch questions). A spy on ``generate`` counts the calls and reads the config; the Qwen
families' shared path (one pass over a unit's video) is tested in test_unit_prefix.py.
"""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import pytest
import torch

from rerankers import bulk
from rerankers.factory import create_captioner
from rerankers.prompts.describe import describe_requests
from retrieval.lmm.captioning import describe_units
from tests import media

FOLDERS = {"qwen": "qwen2_5_vl", "llava": "llava", "internvl": "internvl", "qwen3": "qwen3_vl"}
# small budgets keep the tiny models fast; the caption's stays larger than the concepts', as in the real requests
QUESTIONS = [(request, 12 if tokens > 64 else 5) for request, tokens in describe_requests().values()]


@pytest.fixture(scope="module")
def captioners(tiny_folders):
    return {family: create_captioner(str(tiny_folders[key])) for family, key in FOLDERS.items()}


def videos() -> list[np.ndarray]:
    rng = np.random.default_rng(7)
    return [rng.integers(0, 256, (8, 64, 80, 3), dtype=np.uint8), rng.integers(0, 256, (12, 48, 96, 3), dtype=np.uint8),
            rng.integers(0, 256, (8, 56, 56, 3), dtype=np.uint8)]


def one_request_at_a_time(model, clips, questions) -> list[list[str]]:
    by_request = {request: model.describe_many(clips, request, tokens) for request, tokens in questions}
    return [[by_request[request][i] for request, _ in questions] for i in range(len(clips))]


class CountingGenerate:
    def __init__(self, model):
        self.inner, self.calls = model.model.generate, []

    def __call__(self, **kwargs):
        self.calls.append(kwargs)
        return self.inner(**kwargs)


@pytest.mark.parametrize("family", list(FOLDERS))
def test_every_question_of_every_unit_in_one_generation_answers_as_one_request_at_a_time(captioners, family,
                                                                                        monkeypatch):
    # the one-generation path (the Qwen families share a unit's video instead: tests/rerankers/test_unit_prefix.py)
    model = captioners[family].asked_with(batch_size=4, share=False)
    clips = videos()
    expected = one_request_at_a_time(model, clips, QUESTIONS)
    spy = CountingGenerate(model)
    monkeypatch.setattr(model.model, "generate", spy)
    assert model.describe_each(clips, [QUESTIONS] * len(clips)) == expected
    assert len(spy.calls) == 1  # 3 units x 6 questions: 18 rows, one generate call
    assert spy.calls[0]["input_ids"].shape[0] == len(clips) * len(QUESTIONS)
    assert spy.calls[0]["generation_config"].max_new_tokens == 12
    assert spy.calls[0]["generation_config"].cache_implementation is None  # no static cache on the CPU


def test_each_row_stops_at_its_own_budget(captioners):
    """A concept's answer is cut at its 5 tokens although the caption beside it runs to 12."""
    model = captioners["qwen"]
    clip = videos()[:1]
    short, long = model.describe_each(clip, [[("Describe this video.", 5), ("Describe this video.", 12)]])[0]
    tokens = model.processor.tokenizer
    assert len(tokens.encode(long, add_special_tokens=False)) > len(tokens.encode(short, add_special_tokens=False))
    assert long.startswith(short)
    assert short == model.describe_many(clip, "Describe this video.", 5)[0]


def test_units_of_their_own_questions_and_none(captioners):
    model = captioners["llava"]
    clips = videos()[:2]
    questions = [QUESTIONS[:2], []]
    assert model.describe_each(clips, questions) == [one_request_at_a_time(model, clips[:1], QUESTIONS[:2])[0], []]


def test_out_of_memory_halves_the_units_never_splitting_one(captioners, monkeypatch):
    model = captioners["internvl"].asked_with(batch_size=4)
    clips = videos()
    expected = one_request_at_a_time(model, clips, QUESTIONS)
    inner, rows = model.model.generate, []

    def small_card(**kwargs):
        rows.append(kwargs["input_ids"].shape[0])
        if kwargs["input_ids"].shape[0] > len(QUESTIONS):
            raise torch.cuda.OutOfMemoryError("CUDA out of memory")
        return inner(**kwargs)

    monkeypatch.setattr(model.model, "generate", small_card)
    assert model.describe_each(clips, [QUESTIONS] * len(clips)) == expected
    assert rows == [18, 12, 6, 6, 6]  # 3 units, then 2 + 1, then one unit (its six questions) a call
    assert model.batch_size == 1 and any("out of GPU memory" in n for n in model.notices)


def test_the_static_cache_only_when_asked_and_on_cuda(captioners):
    model = copy.copy(captioners["qwen"])
    model.static_cache = True
    assert bulk.generation_config(model, 64, 700).cache_implementation is None
    on_gpu = copy.copy(model)
    on_gpu.device = torch.device("cuda")  # what the config says on a GPU; nothing runs there
    unasked = copy.copy(on_gpu)
    unasked.static_cache = False  # hf, the default backend: the dynamic cache, no compile before the first caption
    assert bulk.generation_config(unasked, 64, 700).cache_implementation is None
    config = bulk.generation_config(on_gpu, 64, 700)
    assert (config.cache_implementation, config.max_cache_len, config.max_new_tokens) == ("static", 1024, 64)
    assert model._text_config(64).cache_implementation is None  # the per-request path's config is untouched


def test_the_describe_pass_asks_every_question_of_its_units_at_once(captioners, tmp_path, monkeypatch):
    """``describe_units`` (what the index run's mapper calls) stores the answers the per-request path stored."""
    from retrieval.media.video_decoder import VideoDecoder

    model = captioners["qwen"].asked_with(batch_size=2, share=False)  # its video shared: test_unit_prefix.py
    paths = [media.make_clip(tmp_path / "a.mp4", size=(64, 48)), media.make_clip(tmp_path / "b.mp4", size=(96, 64))]
    requests = {key: q for key, q in zip(describe_requests(), QUESTIONS, strict=True)}

    class Unit:
        def __init__(self, path: Path):
            self.path, self.start, self.end = path.name, 0.0, 4.0

    work = [(Unit(p), requests) for p in paths]
    per_request = describe_units(ByRequest(model), VideoDecoder(), tmp_path, work)
    spy = CountingGenerate(model)
    monkeypatch.setattr(model.model, "generate", spy)
    together = describe_units(model, VideoDecoder(), tmp_path, work)
    assert [d.answers for d in together] == [d.answers for d in per_request]
    assert all(d.answers and d.calls == len(requests) for d in together)
    assert len(spy.calls) == 1


class ByRequest:
    """The model without ``describe_each``: the per-request path."""

    def __init__(self, model):
        self._model = model

    def __getattr__(self, name):
        if name == "describe_each":
            raise AttributeError(name)
        return getattr(self._model, name)


def test_a_static_cache_that_fails_falls_back_to_the_dynamic_one_once(captioners, monkeypatch):
    """Where the static cache (or its compiled decode step) fails, the answers come from the dynamic cache, a
    notice says so once, and the model is not asked with the static cache again."""
    model = copy.copy(captioners["llava"])
    model.notices = []
    clips = videos()[:2]
    expected = one_request_at_a_time(model, clips, QUESTIONS[:2])
    monkeypatch.setattr(bulk, "static_cache_fits", lambda m: not getattr(m, "static_cache_failed", False))
    inner, caches = model.model.generate, []

    def no_static(**kwargs):
        caches.append(kwargs["generation_config"].cache_implementation)
        if kwargs["generation_config"].cache_implementation == "static":
            raise RuntimeError("compiled decode step failed")
        return inner(**kwargs)

    monkeypatch.setattr(model.model, "generate", no_static)
    assert model.describe_each(clips, [QUESTIONS[:2]] * 2) == expected
    assert model.describe_each(clips, [QUESTIONS[:2]] * 2) == expected
    assert caches == ["static", None, None]
    assert [n for n in model.notices if "static KV cache failed (RuntimeError)" in n] == \
        ["llava-onevision: the static KV cache failed (RuntimeError); generating with the dynamic cache"]


@pytest.mark.parametrize("family", ["qwen", "internvl"])
def test_inputs_made_ahead_answer_as_inputs_made_in_place(captioners, family, monkeypatch):
    model = captioners[family].asked_with(batch_size=4, share=False)  # rows of one generation: nothing shared
    clips, questions = videos(), [QUESTIONS, QUESTIONS[:2], []]
    expected = model.describe_each(clips, questions)
    ready = model.describe_inputs(clips, questions)
    assert ready.inputs["input_ids"].shape[0] == len(QUESTIONS) + 2

    def remade(*args, **kwargs):
        raise AssertionError("inputs made again")

    monkeypatch.setattr(bulk, "row_inputs", remade)
    assert model.describe_each(clips, questions, ready=ready) == expected


def fed_and_expected(model, tmp_path, monkeypatch, reference=None):
    """Two clip files described by ``LocalDescriber`` (the index run's mapper) and by ``describe_units`` with
    ``reference`` (default ``model``): (fed answers, expected answers, the row inputs made while feeding)."""
    from retrieval.lmm.captioning import LocalDescriber
    from retrieval.media.video_decoder import VideoDecoder

    paths = [media.make_clip(tmp_path / "a.mp4", size=(64, 48)), media.make_clip(tmp_path / "b.mp4", size=(96, 64))]
    requests = {key: q for key, q in zip(describe_requests(), QUESTIONS[:2], strict=False)}

    class Unit:
        def __init__(self, path: Path):
            self.path, self.start, self.end = path.name, 0.0, 4.0

    work = [(Unit(p), requests) for p in paths]
    expected = describe_units(reference or model, VideoDecoder(), tmp_path, work)
    made = []
    real = bulk.row_inputs
    monkeypatch.setattr(bulk, "row_inputs", lambda *args: made.append(args) or real(*args))
    fed = list(LocalDescriber(model, tmp_path)(work))
    return [d.answers for d in fed], [d.answers for d in expected], made


def test_the_local_describer_asks_with_inputs_made_ahead(captioners, tmp_path, monkeypatch):
    """The index run's mapper: units decoded and their inputs made a batch ahead, the answers ``describe_units``'."""
    model = captioners["qwen"].asked_with(batch_size=1, share=False)
    fed, expected, made = fed_and_expected(model, tmp_path, monkeypatch)
    assert fed == expected
    assert len(made) == 2 and all(args[2] is model._feed_processor for args in made)


def test_a_shared_unit_pass_makes_no_rows_ahead(captioners, tmp_path, monkeypatch):
    """With its video shared, a Qwen unit's questions need no row inputs: the feed decodes ahead and makes none."""
    model = captioners["qwen"].asked_with(batch_size=1)
    assert model.share and model.describe_inputs(videos()[:1], [QUESTIONS]) is None
    fed, expected, made = fed_and_expected(model, tmp_path, monkeypatch, reference=model.asked_with(share=False))
    assert fed == expected
    assert made == [] and model.work["prefix_passes"] >= 2
