"""Qwen3-VL in the roles Qwen2.5-VL plays besides pair scoring: descriptions, VQAScore's P("Yes"), which of two
videos a statement fits (differences), a text-only answer; and its timestamps in the prompt."""

from __future__ import annotations

import numpy as np

from rerankers.factory import create_reranker
from tests.rerankers.spies import ProcessorSpy
from tests.tiny_rerankers import noise


def tiny(tiny_folders):
    return create_reranker(str(tiny_folders["qwen3_vl"]), device="cpu", frames_per_video=4)


def test_a_local_qwen3_vl_folder_is_the_qwen3_vl_family(tiny_folders):
    reranker = tiny(tiny_folders)
    assert reranker.name == "qwen3-vl" and reranker.frame_resize().factor == 32


def test_it_describes_answers_yes_no_and_which_video(tiny_folders):
    reranker = tiny(tiny_folders)
    video, other = noise(4, 64, 96, seed=0), noise(4, 64, 96, seed=1)
    (text,) = reranker.describe_many([video], "Describe the video.", 4, prepared=True)
    assert isinstance(text, str)
    (p,) = reranker.yes_probabilities([video], ["Is this video showing a cat?"], prepared=True)
    assert 0.0 < p < 1.0
    clip, n_a, n_b = reranker.pair_clip(video, other, prepared=True)
    (choice,) = reranker.which_video([clip], ["Which video is brighter, a or b?"])
    assert (n_a, n_b) == (4, 4) and 0.0 <= choice.score <= 1.0
    assert isinstance(reranker.answer_text("Say yes.", 2), str)


def test_each_pair_of_frames_is_told_its_time(tiny_folders):
    reranker = tiny(tiny_folders)
    spy = reranker.processor = ProcessorSpy(reranker.processor)
    reranker.score_pairs([(noise(4, 64, 96, seed=0), noise(4, 64, 96, seed=1))], "Location", prepared=True)
    text = reranker.processor.tokenizer.decode(spy.calls[-1][1]["input_ids"][0])
    # 8 frames at 1 fps, paired: the mean time of each pair, video 1's then video 2's
    times = [float(t.split(" seconds>")[0]) for t in text.split("<")[1:] if " seconds>" in t]
    assert np.allclose(times, [0.5, 2.5, 4.5, 6.5])
