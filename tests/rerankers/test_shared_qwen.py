"""Qwen2-VL / Qwen2.5-VL pairs of one anchor share its vision output and the prompt prefix, and score as before.

The shared path (video 1 encoded alone, the prompt up to its last token run once, every candidate's rest run in
one pass over that cache) is compared with the whole-clip path (the processor and ``generate`` over each pair
clip), on tiny random fp32 checkpoints, to 1e-5; a shift of one position or one frame must show.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import torch

from rerankers.factory import create_for_protocol
from rerankers.frames import concat_pair
from tests.tiny_rerankers import TOLERANCE, build, noise

QWENS = ["qwen2_vl", "qwen2_5_vl", "qwen3_vl"]
SIZES = [(84, 56), (56, 112), (112, 84), (56, 84)]  # (height, width) of video 2: other shapes, and video 1's own
GRID = {"qwen3_vl": 32}  # a family's pixel grid where it is not 28


def on_grid(size: tuple[int, int], grid: int) -> tuple[int, int]:
    """A 28-px-grid size moved to ``grid`` (Qwen3-VL's patches of 16 merged 2x2 make a 32-px grid)."""
    return size[0] // 28 * grid, size[1] // 28 * grid


def pairs_of(reranker, n: int = 3) -> list[tuple[np.ndarray, np.ndarray]]:
    """One anchor (the same array in every pair, as FrameCache hands it out) and ``n`` candidates of other sizes,
    as prepared frames are: on the family's pixel grid (small, so the tests run quickly)."""
    grid = GRID.get(reranker.model.config.model_type, 28)
    anchor = noise(reranker.frames_per_video, *on_grid((56, 84), grid), seed=0)
    return [(anchor, noise(reranker.frames_per_video, *on_grid(SIZES[i % len(SIZES)], grid), seed=1 + i))
            for i in range(n)]


def whole_clips(reranker, pairs) -> list[np.ndarray]:
    return [concat_pair(a, b, reranker.frames_per_video, reranker.frame_rule) for a, b in pairs]


def shared_inputs(reranker, pairs) -> tuple[np.ndarray, list[np.ndarray]]:
    """Video 1 and each video 2 as the whole clip holds them (video 2 at video 1's size)."""
    clips = whole_clips(reranker, pairs)
    half = reranker.frames_per_video
    return clips[0][:half], [clip[half:] for clip in clips]


def answer_logits(tokens) -> np.ndarray:
    return np.stack([t.answer_logits for t in tokens])


@pytest.mark.parametrize("family", QWENS)
def test_shared_logits_equal_the_whole_clip_logits(tiny_folders, family):
    reranker = build(tiny_folders, family)
    pairs = pairs_of(reranker)
    want = reranker._next_tokens(whole_clips(reranker, pairs), "Location")
    got = reranker._shared_tokens(*shared_inputs(reranker, pairs), "Location")
    assert answer_logits(got) == pytest.approx(answer_logits(want), abs=TOLERANCE)
    assert [t.text for t in got] == [t.text for t in want]
    assert np.ptp(answer_logits(want), axis=0).max() > 1e-2  # the pairs answer differently: equality means something


@pytest.mark.parametrize("mode", ["expected", "greedy"])
@pytest.mark.parametrize("family", QWENS)
def test_shared_scores_equal_the_unshared_scores(tiny_folders, family, mode):
    reranker = build(tiny_folders, family, batch_size=2)  # 3 candidates: a full batch, then one
    pairs = pairs_of(reranker)
    shared = reranker.score_pairs(pairs, "Main Action", mode, prepared=True)
    assert reranker.work["prefix_passes"] == 1
    reranker.share = False
    alone = reranker.score_pairs(pairs, "Main Action", mode, prepared=True)
    assert reranker.work["prefix_passes"] == 1  # the unshared path runs whole clips only
    for s, a in zip(shared, alone, strict=True):
        assert (s.raw, s.evidence) == (a.raw, a.evidence)
        assert s.score == pytest.approx(a.score, abs=TOLERANCE)
        if mode == "expected":
            assert s.probs == pytest.approx(a.probs, abs=TOLERANCE)
    if mode == "greedy":
        assert all(s.score is not None for s in alone)  # digits, read as scores (not unreadable on both sides)


@pytest.mark.parametrize("family", QWENS)
def test_greedy_token_goes_through_the_checkpoints_logits_processors(tiny_folders, family):
    # a checkpoint's repetition penalty (Qwen2.5-VL's sets 1.05) changes which token generate picks: the prompt
    # holds "1" and "5", so the penalty lowers those answers; the shared path must pick as generate does
    reranker = build(tiny_folders, family)
    reranker._generation_config.repetition_penalty = 50.0
    pairs = pairs_of(reranker)
    want = reranker._next_tokens(whole_clips(reranker, pairs), "Location")
    got = reranker._shared_tokens(*shared_inputs(reranker, pairs), "Location")
    assert [t.text for t in got] == [t.text for t in want]
    assert {t.text for t in want} <= set("234")  # the penalty decided: "1" and "5" are in the prompt


@pytest.mark.parametrize("family", QWENS)
def test_a_position_or_a_frame_off_is_detected(tiny_folders, family, monkeypatch):
    reranker = build(tiny_folders, family)
    pairs = pairs_of(reranker)
    want = answer_logits(reranker._next_tokens(whole_clips(reranker, pairs), "Location"))
    anchor, candidates = shared_inputs(reranker, pairs)

    layout = reranker._pair_layout
    shifted = lambda *args: replace(lay := layout(*args), positions=lay.positions + (  # noqa: E731
        torch.arange(lay.positions.shape[-1]) >= lay.prefix).long())  # every suffix position one further
    monkeypatch.setattr(reranker, "_pair_layout", shifted)
    off_position = answer_logits(reranker._shared_tokens(anchor, candidates, "Location"))
    monkeypatch.undo()
    swapped = anchor[[1, 0, 2, 3]]  # video 1's first two frames in the other order (one temporal patch)
    off_frame = answer_logits(reranker._shared_tokens(swapped, candidates, "Location"))
    # the equality the other tests ask (to TOLERANCE) fails for either, by ten times the tolerance at least
    assert np.abs(off_position - want).max() > 10 * TOLERANCE
    assert np.abs(off_frame - want).max() > 10 * TOLERANCE


@pytest.mark.parametrize("family", QWENS)
def test_an_odd_frame_count_is_not_shared(tiny_folders, family):
    # with temporal patches of 2 frames, video 1's last frame and video 2's first would be one patch
    reranker = build(tiny_folders, family)
    reranker.frames_per_video = 3
    pairs = pairs_of(reranker, 2)
    assert reranker._shared_tokens(*shared_inputs(reranker, pairs), "Location") is None
    scores = reranker.score_pairs(pairs, "Location", prepared=True)
    assert len(scores) == 2 and reranker.work["prefix_passes"] == 0 and reranker.work["pair_passes"] == 2


def test_the_paper_protocol_scores_pairs_unshared(tiny_folders):
    reranker = create_for_protocol(str(tiny_folders["qwen2_5_vl"]), "paper", device="cpu", frames_per_video=4)
    assert reranker.share is False and reranker.asked_with(batch_size=4).share is False
    reranker.score_pairs(pairs_of(reranker, 2), "Location", prepared=True)
    assert reranker.work["prefix_passes"] == 0 and reranker.work["vision_calls"] == 4


def test_out_of_memory_halves_the_shared_batch_and_keeps_the_results(tiny_folders, monkeypatch):
    reranker = build(tiny_folders, "qwen2_vl", batch_size=4)
    pairs = pairs_of(reranker, 4)
    want = reranker.score_pairs(pairs, "Location", prepared=True)
    forward, rows = reranker.model.forward, []

    def limited(*args, **kwargs):
        rows.append(kwargs["inputs_embeds"].shape[0])
        if rows[-1] > 2:
            raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return forward(*args, **kwargs)

    monkeypatch.setattr(reranker.model, "forward", limited)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: None)
    got = reranker.score_pairs(pairs, "Main Action", prepared=True)  # another concept: a new prefix
    assert rows == [1, 4, 2, 2] and reranker.batch_size == 2
    assert "out of GPU memory at 4 pairs a batch; continuing with 2" in reranker.notices[-1]
    monkeypatch.undo()
    again = reranker.score_pairs(pairs, "Main Action", prepared=True)
    assert [s.probs for s in got] == [pytest.approx(s.probs, abs=TOLERANCE) for s in again]
    assert [s.probs for s in got] != [pytest.approx(s.probs, abs=TOLERANCE) for s in want]  # the concept counts


def test_asked_with_switches_sharing_on_one_loaded_model(tiny_folders):
    reranker = build(tiny_folders, "qwen2_vl", batch_size=2)
    alone = reranker.asked_with(share=False)
    assert alone is not reranker and alone.model is reranker.model and reranker.share is True
    assert alone.asked_with(batch_size=4).share is False and reranker.asked_with(share=True) is reranker
    alone.score_pairs(pairs_of(alone, 2), "Location", prepared=True)
    assert alone.work["prefix_passes"] == 0 and alone.work["vision_calls"] == 4
