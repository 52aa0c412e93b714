"""LLaVA-OneVision scoring one anchor against many candidates with the anchor's work done once equals scoring each
pair as one concatenated clip (tiny random fp32 checkpoint, CPU)."""

from __future__ import annotations

import numpy as np
import pytest

from bench.tiny import vlm as tiny_vlm
from rerankers.base import to_pair_score
from rerankers.frames import concat_pair
from rerankers.llava import LlavaReranker

FRAMES = 4
TOL = 1e-5
DETECT = 10 * TOL  # a gap this size is a wrong frame or position, never rounding (which stays under 1e-7)
SHARPEN = 10.0  # query and key weights scaled: random tiny attention is near uniform, blind to order and position
CONCEPTS = ("Main Action", "Location", "Number of People")


@pytest.fixture(scope="module")
def reranker_folder(tmp_path_factory):
    # 56px frames: 4x4 patches a frame, pooled to 2x2, so pooling and the newline both shape the tokens
    return tiny_vlm.build_llava_onevision(tmp_path_factory.mktemp("shared-llava") / "llava", image_size=56)


@pytest.fixture
def reranker(reranker_folder):
    import torch

    reranker = LlavaReranker(str(reranker_folder), name="llava-onevision", device="cpu", dtype="fp32",
                             frames_per_video=FRAMES, batch_size=2)
    with torch.no_grad():  # both paths run the same sharpened model, so equality still means equal computation
        for layer in reranker.model.model.language_model.layers:
            layer.self_attn.q_proj.weight.mul_(SHARPEN)
            layer.self_attn.k_proj.weight.mul_(SHARPEN)
    return reranker


def _videos(seed: int, size: tuple[int, int], count: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.integers(0, 256, (FRAMES, *size, 3), dtype=np.uint8) for _ in range(count)]


def _unshared(reranker, anchor, candidates, concept):
    clips = [concat_pair(anchor, c, FRAMES, reranker.frame_rule) for c in candidates]
    return reranker._next_tokens(clips, concept)


def _largest_gap(shared, unshared) -> float:
    return max(float(np.abs(s.answer_logits - u.answer_logits).max()) for s, u in zip(shared, unshared, strict=True))


@pytest.mark.parametrize("anchor_size", [(40, 48), (64, 36)])
def test_shared_scores_equal_the_concatenated_clips(reranker, anchor_size):
    anchor = _videos(1, anchor_size, 1)[0]
    # candidates of the anchor's size and of another: video 2 is resized to video 1's size as concat_pair does
    candidates = _videos(2, anchor_size, 2) + _videos(3, (30, 52), 3)
    for concept in CONCEPTS[:2]:
        shared = reranker._shared_tokens(anchor, candidates, concept)
        unshared = _unshared(reranker, anchor, candidates, concept)
        assert len(shared) == len(candidates)
        assert _largest_gap(shared, unshared) < TOL
        for mode in ("expected", "greedy"):
            for s, u in zip(shared, unshared, strict=True):
                got, want = to_pair_score(s, mode), to_pair_score(u, mode)
                assert got.raw == want.raw
                assert (got.score is None) == (want.score is None)
                if want.score is not None:
                    assert got.score == pytest.approx(want.score, abs=TOL)


def test_the_candidates_differ_by_more_than_the_tolerance(reranker):
    # the equality above means something only if another video 2 moves the logits past the tolerance
    anchor, first, second = _videos(4, (40, 48), 3)
    shared = reranker._shared_tokens(anchor, [first], CONCEPTS[0])
    assert _largest_gap(shared, _unshared(reranker, anchor, [second], CONCEPTS[0])) > DETECT


def test_a_frame_out_of_place_is_detected(reranker):
    anchor, candidate = _videos(5, (40, 48), 2)
    shared = reranker._shared_tokens(anchor, [candidate], CONCEPTS[0])
    swapped = anchor[[1, 0, *range(2, FRAMES)]]  # video 1's first two frames swapped
    assert _largest_gap(shared, _unshared(reranker, swapped, [candidate], CONCEPTS[0])) > DETECT
    halves = _unshared(reranker, candidate, [anchor], CONCEPTS[0])  # video 1 and video 2 exchanged
    assert _largest_gap(shared, halves) > DETECT


def _shift_positions(reranker, monkeypatch, shift: int) -> None:
    """Run the shared path's generation step with explicit positions, ``shift`` past the right ones."""
    import torch

    generate = reranker.model.generate

    def shifted(*args, input_ids, **kwargs):
        positions = torch.arange(input_ids.shape[1]) + shift
        return generate(*args, input_ids=input_ids, position_ids=positions.expand_as(input_ids), **kwargs)

    monkeypatch.setattr(reranker.model, "generate", shifted)


@pytest.mark.parametrize("shift", [0, 1])
def test_a_position_off_by_one_is_detected(reranker, monkeypatch, shift):
    anchor, *candidates = _videos(6, (40, 48), 3)
    unshared = _unshared(reranker, anchor, candidates, CONCEPTS[0])
    _shift_positions(reranker, monkeypatch, shift)
    gap = _largest_gap(reranker._shared_tokens(anchor, candidates, CONCEPTS[0]), unshared)
    # the positions the path uses on its own are the ones given here at shift 0; one more changes the answer
    assert gap < TOL if shift == 0 else gap > DETECT


def test_each_video_is_encoded_once_and_the_prefix_run_once_across_concepts(reranker):
    anchor = _videos(7, (40, 48), 1)[0]
    candidates = _videos(8, (40, 48), 3) + _videos(9, (30, 52), 2)
    for concept in CONCEPTS:
        reranker._shared_tokens(anchor, candidates, concept)
    # the concept prompt follows the video in LLaVA's user turn: system + video 1 is every concept's prefix
    assert reranker.work["vision_calls"] == 1 + len(candidates)
    assert reranker.work["prefix_passes"] == 1
    assert reranker.work["pair_passes"] == len(CONCEPTS) * len(candidates)


def test_a_new_anchor_is_encoded_and_run_again(reranker):
    first, second, candidate = _videos(10, (40, 48), 3)
    reranker._shared_tokens(first, [candidate], CONCEPTS[0])
    reranker._shared_tokens(second, [candidate], CONCEPTS[0])
    assert reranker.work["vision_calls"] == 3
    assert reranker.work["prefix_passes"] == 2


def test_candidates_with_another_frame_count_are_left_to_the_unshared_path(reranker):
    anchor = _videos(11, (40, 48), 1)[0]
    assert reranker._shared_tokens(anchor, [anchor[:FRAMES - 1]], CONCEPTS[0]) is None
    assert reranker._shared_tokens(anchor, [], CONCEPTS[0]) == []


def test_video_features_end_with_one_newline_whichever_transformers_appends_it(reranker, monkeypatch):
    # transformers up to 5.17 leaves the newline out of get_video_features (the forward appends it); later
    # versions put it in: the shared path's video features must be the same either way
    anchor = _videos(6, (40, 48), 1)[0]
    want = reranker._video_features(anchor, (40, 48))
    inner = reranker.model.model.get_video_features

    def without_newline(*args, **kwargs):
        out = inner(*args, **kwargs)
        out.pooler_output = out.pooler_output[:, :-1]
        return out

    monkeypatch.setattr(reranker.model.model, "get_video_features", without_newline)
    reranker._feature_cache = None
    got = reranker._video_features(anchor.copy(), (40, 48))
    assert got.shape == want.shape
    assert np.array_equal(got.detach().numpy(), want.detach().numpy())
