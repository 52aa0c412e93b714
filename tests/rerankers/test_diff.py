"""Telling two clips apart: VidDiff's questions word for word, P(a) / P(b) read at the first answer token, open
answers read robustly, in every family, through the real factory on tiny random checkpoints."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch

from rerankers.base import LetterOdds, to_choice
from rerankers.factory import create_reranker
from rerankers.hf import letter_token_ids
from rerankers.prompts.diff import (
    CLOSED_TEMPLATE,
    MAX_ACTION_CHARS,
    OPEN_TEMPLATE,
    DiffInputError,
    closed_question,
    open_request,
    parse_differences,
    parse_letter,
    video_description,
)
from tests.rerankers.spies import FAMILIES, PLACEHOLDER, KnownHead, ProcessorSpy

FRAMES_A_VIDEO = {"qwen2_vl": 8, "qwen2_5_vl": 8, "llava": 16, "internvl": 16}

# VidDiff's lmms/lmm_prompts.py (jmhb0/viddiff), copied here so the test does not read the module it checks
REFERENCE_OPEN = (
    'Here are two videos of an action with the following description: "{action_description}".\n'
    "{video_representation_description}\n\n"
    "Return a list of 'differences' in how the action is being performed. \n"
    "Each difference should have a 'description' that is a specific statements that is more true in one video "
    "compared to the other video. \n"
    "Then there is a 'prediction' which is 'a' if the statement applies more to video a and 'b' if it applies more "
    "to video b.\n\n"
    "The difference descriptions should be visual and about how the action is performed. \n"
    "For example 'the jump is higher', or 'the arm is more straight'.\n\n"
    "The difference descriptions should not refer to a specific video. \n"
    "For example you would not say 'the jump in video B is higher'. \n"
    "Instead, the 'description' would be 'the jump is higher', and the 'prediction' is 'b'.\n\n"
    "Suggest no more than {n_differences} differences.\n\n\n"
    "Return a json like this, replacing '...' with actual content:\n"
    '{\n    "0" :  {\n            "description" : "....",\n            "prediction" : "a|b"\n        },\n'
    '    "1" :  {\n            "description" : "....",\n            "prediction" : "a|b"\n        }, \n    ...\n}\n')
REFERENCE_MCQ_AB_HEAD = (
    'Here are two videos of an action with the following description: "{action_description}".\n'
    "{video_representation_description}\n\n"
    "Here is a difference that describe how the action can be performed differently:\n"
    "{differences_annotated}\n\n"
    "Your task is to predict whether the difference is more true for video 'a' or video 'b'.\n")


def frames(n: int, height: int = 56, width: int = 56, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (n, height, width, 3), dtype=np.uint8)


def build(tiny_folders, family: str, **kwargs):
    return create_reranker(str(tiny_folders[family]), device="cpu", **kwargs)


def known_letters(reranker, a: float, b: float, big_a: float = 0.0) -> float:
    """Fix the next-token logits: "a" -> a, "b" -> b, "A" -> big_a, all else 0; returns the vocabulary size."""
    vocab = reranker.model.lm_head.out_features
    logits = torch.zeros(vocab)
    ids = reranker.letter_ids
    logits[ids["a"][0]], logits[ids["b"][0]] = a, b
    upper_a = [i for i in ids["a"][1:] if reranker.processor.tokenizer.decode([i]) == "A"]
    logits[upper_a] = big_a
    reranker.model.lm_head = KnownHead(logits)
    return vocab


# --------------------------------------------------------------------------- the words


def test_the_open_request_is_viddiffs_word_for_word():
    assert OPEN_TEMPLATE == REFERENCE_OPEN
    text = open_request("  barbell   squat ", 4, "VIDEO LINE")
    assert text == REFERENCE_OPEN.replace("{n_differences}", "4").replace(
        "{action_description}", "barbell squat").replace("{video_representation_description}", "VIDEO LINE")


def test_the_closed_question_is_viddiffs_one_difference_prompt_asking_for_the_letter():
    assert CLOSED_TEMPLATE.startswith(REFERENCE_MCQ_AB_HEAD)
    assert CLOSED_TEMPLATE.endswith("If video 'a', answer a.\nIf video 'b', answer b.\nAnswer with the single letter "
                                    "only.")
    text = closed_question("squat", "wider stance", video_description(8, 6))
    assert text == (
        'Here are two videos of an action with the following description: "squat".\n'
        "We have passed one video into the prompt: the frames of video a followed by the frames of video b.\n"
        "The first 8 frames are video a. The last 6 frames are video b.\n\n"
        "Here is a difference that describe how the action can be performed differently:\nwider stance\n\n"
        "Your task is to predict whether the difference is more true for video 'a' or video 'b'.\n"
        "If video 'a', answer a.\nIf video 'b', answer b.\nAnswer with the single letter only.")


def test_the_video_line_names_a_fixed_rate_once_or_each_clips_own():
    assert video_description(4, 4, 4.0, 4.0).endswith("\nThe frame rate is the same and is 4.")
    assert video_description(5, 3, 2.083333, 2.0).endswith("\nThe frame rate of video a is 2.08 and of video b is 2.")
    assert "frame rate" not in video_description(8, 8)


@pytest.mark.parametrize("action", ["", "   ", "x" * (MAX_ACTION_CHARS + 1), "x" * 10_000])
def test_an_empty_or_oversized_action_is_one_clear_error(action):
    with pytest.raises(DiffInputError) as err:
        closed_question(action, "wider stance", "V")
    assert "\n" not in str(err.value) and len(str(err.value)) < 120


@pytest.mark.parametrize("text, letter", [("a", "a"), (" B", "b"), ("(a)", "a"), ("Video b.", "b"), ("A\n", "a"),
                                          ("ab", None), ("I think a", None), ("", None), ("c", None)])
def test_a_greedy_answer_is_a_letter_or_unreadable(text, letter):
    assert parse_letter(text) == letter


# --------------------------------------------------------------------------- reading open answers


def test_a_well_formed_json_answer_is_read_whole():
    answer = json.dumps({"0": {"description": "the squat is deeper", "prediction": "b"},
                         "1": {"description": "wider stance", "prediction": "a"}})
    read = parse_differences(answer, 5)
    assert read.read_as == "json" and read.problems == ()
    assert [(p.description, p.video) for p in read.items] == [("the squat is deeper", "b"), ("wider stance", "a")]


def test_json_in_fences_with_trailing_commas_and_a_broken_item_is_read_and_the_broken_one_reported():
    answer = ('Sure:\n```json\n{\n "0": {"description": "the squat is deeper", "prediction": "b"},\n'
              ' "1": {"prediction": "a"},\n "2": {"description": "faster descent", "prediction": "maybe"},\n}\n```')
    read = parse_differences(answer, 5)
    assert [(p.description, p.video) for p in read.items] == [("the squat is deeper", "b"), ("faster descent", None)]
    assert len(read.problems) == 2
    assert "difference 1 has no description" in read.problems[0]
    assert "difference 2 names no video" in read.problems[1]


def test_numbered_lines_are_read_when_there_is_no_json():
    answer = "Differences:\n1. the squat is deeper (b)\n2) wider stance - video a\n3. knees cave in\n- back is " \
             "straighter, prediction: a\nThat's all."
    read = parse_differences(answer, 5)
    assert read.read_as == "lines"
    assert [(p.description, p.video) for p in read.items] == [
        ("the squat is deeper", "b"), ("wider stance", "a"), ("knees cave in", None), ("back is straighter", "a")]
    assert read.problems == ("a difference names no video (a or b): knees cave in",)


@pytest.mark.parametrize("answer, problem", [("", "the answer is empty"), ("   \n", "the answer is empty"),
                                             ("I cannot see any difference.", "no difference could be read"),
                                             ("{not json at all", "no difference could be read")])
def test_an_empty_or_unreadable_answer_is_reported_not_dropped(answer, problem):
    read = parse_differences(answer, 3)
    assert read.items == () and read.read_as == "nothing"
    assert len(read.problems) == 1 and read.problems[0].startswith(problem)


def test_one_bare_item_and_several_objects_in_prose_are_each_one_difference():
    flat = parse_differences('{"description": "the jump is higher", "prediction": "b"}', 5)
    assert [(p.description, p.video) for p in flat.items] == [("the jump is higher", "b")] and flat.problems == ()
    prose = parse_differences('Sure! {"description": "higher jump", "prediction": "b"} and also '
                              '{"description": "straighter arm", "prediction": "a"}.', 5)
    assert [(p.description, p.video) for p in prose.items] == [("higher jump", "b"), ("straighter arm", "a")]
    broken = parse_differences('{"0": {"description": "deeper", "prediction": "a"}, broken', 5)
    assert [(p.description, p.video) for p in broken.items] == [("deeper", "a")]  # the object inside is kept


def test_numbered_lines_win_over_a_bracket_in_the_prose():
    read = parse_differences("Here are the differences [1]:\n1. deeper squat (a)\n2. wider stance (b)", 5)
    assert read.read_as == "lines" and [p.description for p in read.items] == ["deeper squat", "wider stance"]


def test_more_differences_than_asked_for_are_cut_and_said():
    answer = json.dumps([{"description": f"difference {i}", "prediction": "a"} for i in range(4)])
    read = parse_differences(answer, 2)
    assert [p.description for p in read.items] == ["difference 0", "difference 1"]
    assert read.problems == ("4 differences proposed, 2 asked for: kept the first 2",)


# --------------------------------------------------------------------------- scoring


def test_expected_mode_is_p_a_over_p_a_plus_p_b_and_greedy_the_parsed_letter():
    odds = LetterOdds(0.03, 0.01, "a")
    expected = to_choice(odds, "expected")
    assert expected.score == pytest.approx(0.75) and expected.probs == (0.03, 0.01)
    assert to_choice(odds, "greedy").score == 1.0
    assert to_choice(LetterOdds(0.03, 0.01, " b"), "greedy").score == 0.0
    unreadable = to_choice(LetterOdds(0.03, 0.01, "maybe"), "greedy")
    assert unreadable.score is None and unreadable.raw == "maybe"
    assert to_choice(LetterOdds(math.nan, math.nan, ""), "expected").score is None


@pytest.mark.parametrize("family", FAMILIES)
def test_letter_probabilities_from_known_logits(tiny_folders, family):
    reranker = build(tiny_folders, family, frames_per_video=2)
    vocab = known_letters(reranker, a=3.0, b=1.0, big_a=2.0)
    clip, _, _ = reranker.pair_clip(frames(2), frames(2, seed=1), prepared=True)
    (got,) = reranker.which_video([clip], [closed_question("squat", "wider stance", "V")])
    ids = reranker.letter_ids
    n_a, n_b = len(ids["a"]), len(ids["b"])  # the tiny tokenizers spell each letter "a" and "A"
    assert n_a == n_b == 2
    # by hand: softmax over the whole vocabulary; P(a) sums "a" (e^3) and "A" (e^2), P(b) sums "b" (e^1) and "B" (1)
    total = math.exp(3) + math.exp(2) + math.exp(1) + (vocab - 3)
    p_a, p_b = (math.exp(3) + math.exp(2)) / total, (math.exp(1) + 1) / total
    assert got.probs == pytest.approx((p_a, p_b), abs=1e-7)
    assert got.score == pytest.approx(p_a / (p_a + p_b), abs=1e-7)
    (greedy,) = reranker.which_video([clip], ["Q"], mode="greedy")
    assert greedy.raw == "a" and greedy.score == 1.0


@pytest.mark.parametrize("family", FAMILIES)
def test_each_question_goes_in_the_familys_one_video_chat_with_the_pair_as_one_video(tiny_folders, family):
    reranker = build(tiny_folders, family, batch_size=2)
    reranker.processor = spy = ProcessorSpy(reranker.processor)
    n = FRAMES_A_VIDEO[family]
    clip, n_a, n_b = reranker.pair_clip(frames(n, seed=1), frames(n, 48, 64, seed=2), prepared=True)
    questions = [closed_question("squat", s, video_description(n_a, n_b)) for s in ("wider stance", "deeper")]
    reranker.which_video([clip, clip], questions)
    (kwargs, _), = spy.calls
    assert kwargs["text"] == [reranker.render_request(q) for q in questions]
    for text, question in zip(kwargs["text"], questions, strict=False):
        assert text.count(question) == 1 and text.count(PLACEHOLDER[family]) == 1
    video = kwargs["videos"][0]
    assert (n_a, n_b) == (n, n) and len(video) == 2 * n
    assert video[:n].tolist() == frames(n, seed=1).tolist()  # video a first, as given
    assert video.shape[1:3] == (56, 56)  # video b brought to video a's size


def test_qwen_pads_each_clip_to_whole_frame_pairs_so_no_pair_mixes_the_videos(tiny_folders):
    reranker = build(tiny_folders, "qwen2_vl")
    clip, n_a, n_b = reranker.pair_clip(frames(5), frames(3, seed=1), prepared=True)
    assert (n_a, n_b) == (6, 4) and len(clip) == 10
    assert clip[5].tolist() == clip[4].tolist() and clip[9].tolist() == clip[8].tolist()
    llava = build(tiny_folders, "llava")
    assert llava.pair_clip(frames(5), frames(3, seed=1), prepared=True)[1:] == (5, 3)


@pytest.mark.parametrize("family", ["qwen2_vl", "llava", "internvl"])
def test_raw_frames_are_prepared_with_the_familys_own_rule(tiny_folders, family):
    reranker = build(tiny_folders, family)
    clip, n_a, n_b = reranker.pair_clip(frames(40, 48, 64), frames(7, seed=1))
    n = FRAMES_A_VIDEO[family]
    assert (n_a, n_b) == (n, n) and len(clip) == 2 * n


def test_the_letters_must_be_single_tokens_and_every_one_token_spelling_counts(tiny_folders):
    reranker = build(tiny_folders, "qwen2_vl")
    tokenizer = reranker.processor.tokenizer
    ids = letter_token_ids(tokenizer, "a")
    assert ids[0] == tokenizer.encode("a", add_special_tokens=False)[0]
    assert all(len(tokenizer.encode(tokenizer.decode([i]), add_special_tokens=False)) == 1 for i in ids)
    assert len(set(ids)) == len(ids)


@pytest.mark.parametrize("family", ["qwen2_vl", "llava", "internvl"])
def test_open_answers_and_text_only_questions_are_generated(tiny_folders, family):
    reranker = build(tiny_folders, family)
    reranker.processor = spy = ProcessorSpy(reranker.processor)
    clip, n_a, n_b = reranker.pair_clip(frames(3), frames(3, seed=1))
    request = open_request("squat", 3, video_description(n_a, n_b))
    (answer,) = reranker.answer_about([clip], request, 4)
    assert isinstance(answer, str)
    assert spy.calls[-1][0]["text"] == [reranker.render_request(request)]
    judged = reranker.answer_text("Which keys match?", 3)
    assert isinstance(judged, str)
    text = spy.calls[-1][0]["text"][0]
    assert "Which keys match?" in text and PLACEHOLDER[family] not in text and "videos" not in spy.calls[-1][0]
