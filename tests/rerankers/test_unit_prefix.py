"""A unit's caption and concept questions after one pass over its video answer as each question's own generation.

Tiny random fp32 Qwen2.5-VL and Qwen3-VL checkpoints (bench/tiny/vlm.py), three units of different sizes, six
questions each, the checkpoint's repetition penalty set to Qwen's 1.05 (so the logits processors count). The
reference is the same model with ``share=False``: every question a row of one ``generate`` call, its video beside it.
A wrapper on the vision tower's forward counts its calls and the videos they encode.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from rerankers import bulk, unit_prefix
from rerankers.decoding import Decoding
from rerankers.factory import create_captioner
from rerankers.prompts.describe import describe_requests
from tests.rerankers.test_bulk_captions import QUESTIONS, videos

FOLDERS = {"qwen2.5-vl": "qwen2_5_vl", "qwen3-vl": "qwen3_vl"}


def captioner(tiny_folders, family: str):
    """A fresh captioner (its generation config changed here only) with Qwen's repetition penalty."""
    model = create_captioner(str(tiny_folders[FOLDERS[family]])).asked_with(batch_size=4)
    model.model.generation_config.repetition_penalty = 1.05
    model._generation_config = model._greedy_config()
    return model


class VisionCount:
    """Wraps the vision tower's forward: its calls, and the videos (rows of ``grid_thw``) they encoded."""

    def __init__(self, model, monkeypatch):
        tower = model.model.model.visual
        self.inner, self.calls, self.videos = tower.forward, 0, 0
        monkeypatch.setattr(tower, "forward", self)

    def __call__(self, *args, **kwargs):
        grid = kwargs["grid_thw"] if "grid_thw" in kwargs else args[1]
        self.calls, self.videos = self.calls + 1, self.videos + int(grid.shape[0])
        return self.inner(*args, **kwargs)


@pytest.mark.parametrize("family", list(FOLDERS))
def test_one_vision_pass_a_unit_answers_as_a_pass_a_question(tiny_folders, family, monkeypatch):
    model, clips = captioner(tiny_folders, family), videos()
    questions = [QUESTIONS] * len(clips)
    count = VisionCount(model, monkeypatch)
    alone = model.asked_with(share=False).describe_each(clips, questions)
    before = (count.calls, count.videos)
    count.calls = count.videos = 0
    shared = model.describe_each(clips, questions)
    assert shared == alone
    assert before == (1, len(clips) * len(QUESTIONS))  # one generate call: the tower sees every row's video (18)
    assert (count.calls, count.videos) == (1, len(clips))  # one call: each unit's video once (3)
    assert model.work["prefix_passes"] == len(clips)


@pytest.mark.parametrize("family", list(FOLDERS))
def test_every_step_reads_the_logits_generate_reads(tiny_folders, family, monkeypatch):
    """A tiny random model's texts hardly depend on its input, so its logits are compared too: at each of four new
    tokens, every row's equal ``generate``'s over the whole prompts (a token or a position off shows)."""
    model = captioner(tiny_folders, family)
    clips, questions = [model._one_clip(v, False) for v in videos()], [(request, 4) for request, _ in QUESTIONS]
    steps = []
    inner = unit_prefix.greedy

    def recording(step, logits, *args):
        def recorded(*step_args):
            steps.append(step(*step_args))
            return steps[-1]

        steps.append(logits)
        return inner(recorded, logits, *args)

    monkeypatch.setattr(unit_prefix, "greedy", recording)
    model.describe_each(clips, [questions] * len(clips), prepared=True)
    texts = [model.render_request(request) for _ in clips for request, _ in questions]
    videos_in, kwargs = model._video_inputs([clip for clip in clips for _ in questions])
    inputs = model.processor(text=texts, videos=videos_in, padding=True, padding_side="left", return_tensors="pt",
                             **kwargs)
    config = model._text_config(4)
    config.output_logits = config.return_dict_in_generate = True
    with torch.inference_mode():
        want = model.model.generate(**model._to_device(inputs), generation_config=config).logits
    assert len(steps) == len(want) == 4
    for got, expected in zip(steps, want, strict=True):
        assert got.float().numpy() == pytest.approx(expected.float().numpy(), abs=1e-5)
    assert np.ptp(want[0].float().numpy(), axis=0).max() > 1e-3  # the rows' logits differ: equality means something


@pytest.mark.parametrize("family", list(FOLDERS))
def test_the_prompt_cut_after_the_video_is_the_whole_prompt(tiny_folders, family):
    """The prefix's ids then the request's tail ids are the processor's ids for the whole describe prompt."""
    model = captioner(tiny_folders, family)
    clip = model._one_clip(videos()[1], False)
    for request, _ in QUESTIONS:
        head, tail = model._split_request(request)
        whole = model._prompt_inputs(model.render_request(request), clip)["input_ids"][0]
        assert torch.equal(torch.cat([model._unit_prefix(clip, head).ids, model._tail_ids(tail)]), whole)


def test_the_static_cache_answers_as_the_dynamic_one(tiny_folders):
    """18 rows in a static cache of 32 (its row bucket) and 1024 positions (prompts of about 700 tokens and 12 new
    ones, in 512s): the answers do not change."""
    model, clips = captioner(tiny_folders, "qwen2.5-vl"), videos()
    expected = model.describe_each(clips, [QUESTIONS] * len(clips))
    model.decoding = Decoding(static=True)
    assert model.describe_each(clips, [QUESTIONS] * len(clips)) == expected
    (cache,) = model.model._static_caches.values()
    assert {tuple(layer.keys.shape[::2]) for layer in cache.layers} == {(32, 1024)}


def test_units_of_their_own_questions_and_none(tiny_folders):
    model, clips = captioner(tiny_folders, "qwen3-vl"), videos()
    asked = [QUESTIONS[:1], [], QUESTIONS[2:5]]
    assert model.describe_each(clips, asked) == model.asked_with(share=False).describe_each(clips, asked)


def test_a_failing_static_cache_falls_back_to_the_dynamic_one(tiny_folders, monkeypatch):
    model, clips = captioner(tiny_folders, "qwen2.5-vl"), videos()[:2]
    expected = model.describe_each(clips, [QUESTIONS] * 2)
    model.decoding = Decoding(static=True)

    def broken(cache, filled):
        raise RuntimeError("no static cache here")

    monkeypatch.setattr(unit_prefix, "fill_static", broken)
    assert model.describe_each(clips, [QUESTIONS] * 2) == expected
    assert model.static_cache_failed and bulk.unit_decoding(model) == Decoding()
    assert any("static KV cache failed (RuntimeError)" in n for n in model.notices)


def test_how_the_shared_path_decodes(tiny_folders):
    model = captioner(tiny_folders, "qwen2.5-vl")
    assert bulk.unit_decoding(model) == Decoding()  # the CPU: the dynamic cache
    model.device = torch.device("cuda")  # what it chooses on a GPU; nothing runs there
    assert bulk.unit_decoding(model) == Decoding(static=True)  # no copy of the cache a token; no compile unasked
    model.static_cache = True  # --captioner-backend hf-static
    assert bulk.unit_decoding(model) == Decoding(static=True, compiled=True)


def test_families_that_cannot_cut_their_prompt_generate_as_before(tiny_folders):
    model = create_captioner(str(tiny_folders["llava"]))
    assert model._split_request(describe_requests()["caption"][0]) is None
    assert unit_prefix.generate_shared(model, [(videos()[0], QUESTIONS)], Decoding()) is None


@pytest.mark.slow  # torch.compile on the CPU: about half a minute
def test_the_compiled_decode_step_answers_as_the_eager_one_and_compiles_once_a_bucket(tiny_folders, tmp_path,
                                                                                    monkeypatch):
    from torch._dynamo.utils import counters

    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "inductor"))
    model, clips = captioner(tiny_folders, "qwen2.5-vl"), videos()
    expected = model.describe_each(clips, [QUESTIONS] * len(clips))
    model.decoding = Decoding(static=True, compiled=True)
    assert model.describe_each(clips, [QUESTIONS] * len(clips)) == expected
    graphs = counters["stats"]["unique_graphs"]
    assert model.describe_each(videos(), [QUESTIONS] * len(clips)) == expected  # other arrays, the same bucket
    assert counters["stats"]["unique_graphs"] == graphs
    assert any((tmp_path / "inductor").iterdir())


def test_greedy_decoding_stops_rows_at_their_end_or_budget_and_looks_at_the_host_every_few_tokens():
    from rerankers.decoding import CHECK_EVERY, Rows, greedy

    vocab, end, pad = 6, 5, 0
    steps = []

    def step(token, position, rows):
        steps.append(position.tolist())
        logits = torch.zeros(2, vocab)
        logits[0, end] = 1.0  # row 0 ends at its second token
        logits[1, 3] = 1.0
        return logits

    first = torch.zeros(2, vocab)
    first[:, 2] = 1.0
    rows = Rows(torch.zeros(2, 2 + 40, dtype=torch.long), torch.ones(2, 42, dtype=torch.long), torch.tensor([7, 9]), 2)
    out = greedy(step, first, rows, [40, 3], None, [end], pad)
    assert out[0, :3].tolist() == [2, end, pad] and out[1, :4].tolist() == [2, 3, 3, pad]
    assert len(steps) == CHECK_EVERY - 1  # every row done by token 3, seen at the first look
    assert steps[0] == [7, 9] and steps[1] == [8, 10]  # each row's own next position
    assert np.array_equal(rows.tokens[:, 2:2 + CHECK_EVERY].numpy(), out[:, :CHECK_EVERY].numpy())
