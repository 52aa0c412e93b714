"""VQAScore: the reference's yes/no questions, and P("Yes") read from each family's first answer token.

Tiny random checkpoints (bench/tiny/vlm.py) load through the real factory.  The probabilities are
checked against a forward pass the tests run on the raw model themselves, and against logits they
fix by hand.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from rerankers.base import Reranker, RerankerError
from rerankers.factory import create_reranker
from rerankers.hf import single_token_id
from rerankers.prompts.similarity import PROMPT_VERSION
from rerankers.prompts.vqascore import (
    FIGURE_QUESTION,
    VIDEO_QUESTION,
    VQA_PROMPT_VERSION,
    YES,
    pair_questions,
    pair_score,
)
from tests.rerankers.spies import BATCHED, FAMILIES, PLACEHOLDER, KnownHead, ProcessorSpy

SYSTEM = {"qwen2_vl": "You are a helpful assistant.", "qwen2_5_vl": "You are a helpful assistant.",
          "llava": "You are a helpful assistant.", "internvl": "你是书生·万象"}
QUESTIONS = list(pair_questions("a dog runs across a wide green field", "a cat sits")) + [
    'Is this video showing "rain"? Please answer yes or no.']


def frames(n: int, height: int = 56, width: int = 56, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (n, height, width, 3), dtype=np.uint8)


def build(tiny_folders, family: str, **kwargs):
    return create_reranker(str(tiny_folders[family]), device="cpu", **kwargs)


def spied(reranker) -> ProcessorSpy:
    reranker.processor = ProcessorSpy(reranker.processor)
    return reranker.processor


def sharpen(reranker, factor: float = 10.0) -> None:
    # a random tiny model gives "Yes" about 1/vocab whatever it sees; scaling the head spreads the
    # answers apart, so two computations that agree really agree
    with torch.no_grad():
        reranker.model.lm_head.weight.mul_(factor)


def assert_same(got: list[float], want: list[float], tolerance: float) -> None:
    """Equal probabilities, and equal to a relative ``10 * tolerance`` too (P("Yes") is small here)."""
    assert got == pytest.approx(want, abs=tolerance)
    assert np.log(got) == pytest.approx(np.log(want), abs=10 * tolerance)
    assert np.ptp(np.log(want)) > 1e-2  # the videos answer differently, so agreement means something


def video_kwargs(family: str, n_frames: int) -> dict:
    """What the reference hands the processor with ready frames, written out here: never resample;
    Qwen's frames are already on its grid and clocked at 2 fps."""
    if family.startswith("qwen"):
        metadata = [{"total_num_frames": n_frames, "fps": 2.0, "frames_indices": list(range(n_frames))}]
        return {"do_sample_frames": False, "do_resize": False, "video_metadata": metadata}
    return {"do_sample_frames": False}


# --------------------------------------------------------------------------- the questions


def test_the_questions_are_the_reference_text_word_for_word():
    about_1, about_2 = pair_questions("a dog runs", "a cat sits")
    # video 1 is asked about video 2's caption ("figure"), video 2 about video 1's ("video")
    assert about_1 == 'Is this figure showing "a cat sits"? Please answer yes or no.'
    assert about_2 == 'Is this video showing "a dog runs"? Please answer yes or no.'
    assert FIGURE_QUESTION.format("x") == 'Is this figure showing "x"? Please answer yes or no.'
    assert VIDEO_QUESTION.format("x") == 'Is this video showing "x"? Please answer yes or no.'
    assert YES == "Yes"


def test_captions_are_stripped_and_an_empty_one_is_an_error():
    assert pair_questions("  a dog runs\n", "\ta cat sits ") == pair_questions("a dog runs", "a cat sits")
    for captions in [("", "a cat"), ("a dog", "   "), ("\n", "\n")]:
        with pytest.raises(ValueError, match="no caption"):
            pair_questions(*captions)


def test_the_pair_score_is_the_mean_and_needs_both_halves():
    assert pair_score(0.2, 0.6) == pytest.approx(0.4)
    assert pair_score(1.0, 0.0) == pytest.approx(0.5)
    assert pair_score(0.3, 0.3) == pytest.approx(0.3)
    assert pair_score(None, 0.6) is None
    assert pair_score(0.6, None) is None
    assert pair_score(None, None) is None


# --------------------------------------------------------------------------- what the model reads


@pytest.mark.parametrize("family", FAMILIES)
def test_the_rendered_prompt_holds_one_video_then_exactly_the_question(tiny_folders, family):
    reranker = build(tiny_folders, family)
    question = QUESTIONS[0]
    text = reranker.render_request(question)
    assert text.count(question) == 1 and text.count(PLACEHOLDER[family]) == 1
    assert f"{PLACEHOLDER[family]}{question}<|im_end|>\n<|im_start|>assistant\n" in text
    assert text.endswith("<|im_start|>assistant\n") and SYSTEM[family] in text


@pytest.mark.parametrize("family", FAMILIES)
def test_each_video_goes_with_its_own_question_padded_on_the_left(tiny_folders, family):
    reranker = build(tiny_folders, family, frames_per_video=2, batch_size=3)
    spy = spied(reranker)
    videos = [frames(2, seed=k) for k in range(3)]
    reranker.yes_probabilities(videos, QUESTIONS, prepared=True)
    (kwargs, out), = spy.calls
    assert kwargs["text"] == [reranker.render_request(q) for q in QUESTIONS]
    assert kwargs["padding_side"] == "left"
    assert [v.tolist() for v in kwargs["videos"]] == [v.tolist() for v in videos]
    assert out["attention_mask"][:, -1].tolist() == [1, 1, 1]  # every row ends at its prompt's end
    assert out["attention_mask"].min() == 0  # questions of different lengths: padding really happened


@pytest.mark.parametrize("family", ["qwen2_vl", "llava", "internvl"])
def test_videos_are_prepared_as_for_describing(tiny_folders, family):
    reranker = build(tiny_folders, family, frames_per_video=2)
    raw = frames(9, 48, 64, seed=3)
    spy = spied(reranker)
    reranker.describe(raw, "Describe this video in detail.", 1)
    reranker.yes_probabilities([raw], QUESTIONS[:1])
    (described, _), (asked, _) = spy.calls
    assert asked["videos"][0].tolist() == described["videos"][0].tolist()


# --------------------------------------------------------------------------- P("Yes")


@pytest.mark.parametrize("family", FAMILIES)
def test_yes_probability_is_the_softmax_of_the_raw_models_next_token(tiny_folders, family):
    reranker = build(tiny_folders, family)
    sharpen(reranker)
    n = reranker.frames_per_video
    yes_id = reranker.processor.tokenizer.convert_tokens_to_ids("Yes")
    got = reranker.yes_probabilities([frames(n, seed=1), frames(n, seed=2)], QUESTIONS[:2], prepared=True)
    want = []
    for seed, question in zip((1, 2), QUESTIONS[:2], strict=False):
        inputs = reranker.processor(text=[reranker.render_request(question)], videos=[frames(n, seed=seed)],
                                    return_tensors="pt", **video_kwargs(family, n))
        with torch.no_grad():
            logits = reranker.model(**inputs).logits[0, -1].double()
        want.append(float(torch.softmax(logits, dim=-1)[yes_id]))
    assert_same(got, want, 1e-5)


@pytest.mark.parametrize("family", FAMILIES)
def test_yes_probability_from_known_logits(tiny_folders, family):
    reranker = build(tiny_folders, family, frames_per_video=2)
    vocab = reranker.model.lm_head.out_features
    yes_id = reranker.processor.tokenizer.convert_tokens_to_ids("Yes")
    logits = torch.zeros(vocab)
    logits[yes_id] = 2.0
    others = [reranker.processor.tokenizer.convert_tokens_to_ids(t) for t in ("1", "N", "o")]
    logits[others] = 1.0
    reranker.model.lm_head = KnownHead(logits)
    # softmax over the whole vocabulary, by hand: e^2 / (e^2 + 3 e^1 + (vocab - 4) e^0)
    expected = math.exp(2) / (math.exp(2) + 3 * math.exp(1) + (vocab - 4))
    got = reranker.yes_probabilities([frames(2, seed=0), frames(3, 48, 64, seed=1)], QUESTIONS[:2])
    assert got == pytest.approx([expected, expected], abs=1e-6)


@pytest.mark.parametrize("family", BATCHED)
def test_a_batch_answers_as_each_video_alone(tiny_folders, family):
    reranker = build(tiny_folders, family, frames_per_video=2, batch_size=3)
    sharpen(reranker)
    # other aspect ratios give Qwen clips of other token counts; the questions differ in length too
    videos = [frames(2, 56, 84, seed=4), frames(5, 48, 64, seed=5), frames(2, 84, 56, seed=6)]
    spy = spied(reranker)
    batched = reranker.yes_probabilities(videos, QUESTIONS)
    reranker.batch_size = 1
    alone = reranker.yes_probabilities(videos, QUESTIONS)
    assert [len(kwargs["text"]) for kwargs, _ in spy.calls] == [3, 1, 1, 1]
    assert_same(batched, alone, 1e-4)


@pytest.mark.parametrize("value", [math.nan, math.inf])
def test_non_finite_logits_leave_that_video_unanswered_only(tiny_folders, value):
    reranker = build(tiny_folders, "qwen2_vl", frames_per_video=2, batch_size=3)
    logits = torch.zeros(reranker.model.lm_head.out_features)
    logits[reranker.yes_id] = 3.0
    reranker.model.lm_head = KnownHead(logits, rows=(1,), value=value)
    got = reranker.yes_probabilities([frames(2, seed=k) for k in range(3)], QUESTIONS)
    vocab = len(logits)
    expected = math.exp(3) / (math.exp(3) + vocab - 1)
    assert got[1] is None
    assert got[0] == pytest.approx(expected, abs=1e-6) and got[2] == pytest.approx(expected, abs=1e-6)
    reranker.yes_probabilities([frames(2, seed=k) for k in range(3)], QUESTIONS)
    (notice,) = reranker.notices  # said once, not once a batch
    assert "non-finite" in notice and "\n" not in notice


def test_out_of_memory_halves_the_batch_and_keeps_the_answers(tiny_folders, monkeypatch):
    reranker = build(tiny_folders, "llava", frames_per_video=2, batch_size=4)
    sharpen(reranker)
    videos = [frames(2, seed=k) for k in range(4)]
    questions = [QUESTIONS[k % 3] for k in range(4)]
    unconstrained = reranker.yes_probabilities(videos, questions)
    tried: list[int] = []
    generate = reranker.model.generate

    def limited(**kwargs):
        tried.append(kwargs["input_ids"].shape[0])
        if tried[-1] > 2:
            raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return generate(**kwargs)

    monkeypatch.setattr(reranker.model, "generate", limited)
    assert_same(reranker.yes_probabilities(videos, questions), unconstrained, 1e-5)
    assert tried == [4, 2, 2] and reranker.batch_size == 2
    (notice,) = reranker.notices
    assert "out of GPU memory at 4 videos a batch; continuing with 2" in notice


# --------------------------------------------------------------------------- errors and cache key


def test_a_tokenizer_that_splits_yes_fails_when_asked_not_when_built(tiny_folders, monkeypatch):
    reranker = build(tiny_folders, "llava", frames_per_video=2)
    monkeypatch.setattr(reranker.processor.tokenizer, "encode", lambda text, add_special_tokens=False: [7, 8, 9])
    with pytest.raises(RerankerError, match="splits the answer 'Yes'"):
        reranker.yes_probabilities([frames(2)], QUESTIONS[:1])


def test_the_yes_token_of_every_tiny_family_is_one_token(tiny_folders):
    for family in FAMILIES:
        tokenizer = build(tiny_folders, family).processor.tokenizer
        assert tokenizer.convert_ids_to_tokens(single_token_id(tokenizer, "Yes")) == "Yes"


def test_questions_must_match_the_videos(tiny_folders):
    reranker = build(tiny_folders, "llava", frames_per_video=2)
    with pytest.raises(ValueError, match="one question a video"):
        reranker.yes_probabilities([frames(2), frames(2)], QUESTIONS[:1])
    with pytest.raises(ValueError, match="empty"):
        reranker.yes_probabilities([frames(2)], ["  "])
    assert reranker.yes_probabilities([], []) == []


def test_a_family_without_yes_no_answers_says_so():
    class Scorer(Reranker):
        name, source = "scorer", "nowhere"

        def _next_tokens(self, clips, concept_words):
            return []

    with pytest.raises(RerankerError, match="scorer cannot answer yes/no questions"):
        Scorer().yes_probabilities([frames(2)], QUESTIONS[:1])


def test_the_vqa_cache_tag_names_what_a_score_depends_on(tiny_folders):
    reranker = build(tiny_folders, "llava")
    tag = reranker.vqa_tag
    assert tag.startswith(f"{reranker.model_id}@{reranker.revision}|")
    assert f"vqa={VQA_PROMPT_VERSION}" in tag and PROMPT_VERSION not in tag
    assert "frames=linspace:16" in tag and reranker.frame_spec.resize.describe() in tag
    assert tag != reranker.cache_tag
    assert "frames=linspace:4" in build(tiny_folders, "llava", frames_per_video=4).vqa_tag
