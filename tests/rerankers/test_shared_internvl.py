"""InternVL pairs that share video 1: the anchor's frame features once, the prompt up to its last frame once a
concept, and the scores of the whole-pair path (``_next_tokens`` over ``concat_pair`` clips) to 1e-5 in fp32.

The tiny checkpoint is built at 56 pixels (four image tokens a frame, so a frame's tokens must land in order) and
its weights are redrawn wider than the builder's, so that a suffix shifted by one position or two swapped frames
moves the answer logits far past the tolerance; the answer tokens' output rows are made the largest, so greedy
answers are scores.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from bench.tiny import vlm as tiny_vlm
from rerankers.base import to_pair_score
from rerankers.factory import create_reranker
from rerankers.frames import concat_pair, resize_video

TOLERANCE = 1e-5
CONCEPTS = ("Main Action", "Objects", "Location")


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return tiny_vlm.build_internvl(tmp_path_factory.mktemp("shared-internvl") / "internvl", image_size=56)


@pytest.fixture
def model(folder):
    reranker = create_reranker(f"internvl:{folder}", device="cpu", dtype="fp32")
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for parameter in reranker.model.parameters():
            if parameter.dim() >= 2:
                parameter.copy_(torch.randn(parameter.shape, generator=generator) * 0.1)
        head = reranker.model.get_output_embeddings().weight
        others = torch.ones(head.shape[0], dtype=torch.bool)
        others[reranker.answer_ids] = False
        head[others] *= 0.01
        head[reranker.answer_ids] *= 3
    return reranker


def clip(rng, height: int, width: int, frames: int = 16) -> np.ndarray:
    return rng.integers(0, 256, (frames, height, width, 3), dtype=np.uint8)


def unshared(model, anchor, candidates, concept):
    return model._next_tokens([concat_pair(anchor, c, model.frames_per_video, model.frame_rule)
                               for c in candidates], concept)


def as_candidates(anchor, raw):
    """Each video 2 as the caller hands it over: resized to video 1's size as concat_pair resizes it."""
    return [resize_video(c, *anchor.shape[1:3]) for c in raw]


def gap(expected, got) -> float:
    return max(float(np.abs(e.answer_logits - g.answer_logits).max()) for e, g in zip(expected, got, strict=True))


@pytest.mark.parametrize("anchor_size,candidate_sizes", [
    ((56, 56), [(56, 56), (56, 56), (56, 56), (56, 56), (56, 56)]),
    ((48, 64), [(70, 52), (48, 64), (30, 40), (56, 56), (90, 120)]),  # two sizes and more: video 2 resized
])
def test_shared_scores_equal_the_whole_pair_path(model, anchor_size, candidate_sizes):
    rng = np.random.default_rng(1)
    anchor = clip(rng, *anchor_size)
    raw = [clip(rng, *size) for size in candidate_sizes]
    model.batch_size = 2  # five candidates: three suffix batches after one prefix
    for concept in CONCEPTS[:2]:
        expected = unshared(model, anchor, raw, concept)
        got = model._shared_tokens(anchor, as_candidates(anchor, raw), concept)
        assert gap(expected, got) < TOLERANCE
        spread = np.ptp([t.answer_logits for t in expected], axis=0).max()
        assert spread > 100 * TOLERANCE  # the candidates really score differently
        for mode in ("expected", "greedy"):
            want = [to_pair_score(t, mode) for t in expected]
            have = [to_pair_score(t, mode) for t in got]
            assert [s.raw for s in have] == [s.raw for s in want]
            assert [s.score for s in have] == pytest.approx([s.score for s in want], abs=TOLERANCE)
        assert all(to_pair_score(t, "greedy").score is not None for t in got)  # greedy answers are scores


def test_greedy_tokens_follow_the_checkpoints_logits_processors(model):
    # a repetition penalty in the checkpoint's generation config changes the greedy token generate picks (the
    # prompt holds every digit: "Frame1".."Frame32", "from 1 to 5"); the shared path picks it the same way
    rng = np.random.default_rng(2)
    anchor, raw = clip(rng, 56, 56), [clip(rng, 56, 56) for _ in range(3)]
    plain = [t.text for t in unshared(model, anchor, raw, "Main Action")]
    model._generation_config.repetition_penalty = 50.0
    expected = [t.text for t in unshared(model, anchor, raw, "Main Action")]
    assert expected != plain
    assert [t.text for t in model._shared_tokens(anchor, raw, "Main Action")] == expected


def test_one_anchor_is_encoded_once_and_each_candidate_once_across_concepts(model):
    rng = np.random.default_rng(3)
    anchor, candidates = clip(rng, 56, 56), [clip(rng, 56, 56) for _ in range(4)]
    model.work.clear()
    for concept in CONCEPTS:
        model._shared_tokens(anchor, candidates, concept)
    n, c = len(candidates), len(CONCEPTS)
    assert model.work["vision_calls"] == 1 + n
    assert model.work["prefix_passes"] == c
    assert model.work["pair_passes"] == c * n


def test_a_suffix_off_by_one_position_is_caught(model, monkeypatch):
    rng = np.random.default_rng(4)
    anchor, raw = clip(rng, 56, 56), [clip(rng, 56, 56) for _ in range(3)]
    expected = unshared(model, anchor, raw, "Main Action")
    positions = type(model)._suffix_positions
    monkeypatch.setattr(type(model), "_suffix_positions", lambda self, layout: positions(self, layout) + 1)
    assert gap(expected, model._shared_tokens(anchor, raw, "Main Action")) > 100 * TOLERANCE


@pytest.mark.parametrize("which", ["anchor", "candidate"])
def test_two_swapped_frames_are_caught(model, which):
    rng = np.random.default_rng(5)
    anchor, raw = clip(rng, 56, 56), [clip(rng, 56, 56) for _ in range(3)]
    expected = unshared(model, anchor, raw, "Main Action")
    order = [1, 0, *range(2, 16)]
    if which == "anchor":
        got = model._shared_tokens(anchor[order], raw, "Main Action")
    else:
        got = model._shared_tokens(anchor, [c[order] for c in raw], "Main Action")
    assert gap(expected, got) > 10 * TOLERANCE


def test_each_frame_is_encoded_on_its_own(model):
    # the vision tower, pixel shuffle and projector see one frame at a time: a video's features are the same
    # encoded alone or inside a pair's clip, so they can be computed once and reused
    rng = np.random.default_rng(10)
    anchor, other = clip(rng, 56, 56), clip(rng, 56, 56)
    pair = concat_pair(anchor, other, 16, model.frame_rule)
    videos, kwargs = model._video_inputs([pair])
    inputs = model.processor(text=[model.render_prompt("Main Action")], videos=videos, return_tensors="pt", **kwargs)
    with torch.inference_mode():
        whole = model.model.get_image_features(pixel_values=inputs["pixel_values"]).pooler_output
        alone = model._encode([other, anchor])
    tokens = whole.shape[1]
    assert torch.allclose(alone[1], whole[:16].reshape(16 * tokens, -1), atol=1e-6)
    assert torch.allclose(alone[0], whole[16:].reshape(16 * tokens, -1), atol=1e-6)


def test_the_prompt_splits_after_video_1s_last_frame_line(model):
    rng = np.random.default_rng(6)
    layout = model._pair_layout("Main Action", clip(rng, 56, 56))
    decode = model.processor.tokenizer.decode
    assert decode(layout.ids[0, : layout.split]).endswith("Frame16: <img>" + "<IMG_CONTEXT>" * 4 + "</img>")
    assert decode(layout.ids[0, layout.split :]).startswith("\nFrame17: <img>")


def test_every_pair_at_one_frame_count_has_the_same_prompt_so_no_row_is_padded(model):
    # the suffix pass gives every row the same positions: the whole-pair path pads nothing either
    rng = np.random.default_rng(7)
    anchor = clip(rng, 56, 56)
    clips = [concat_pair(anchor, clip(rng, h, w), 16, model.frame_rule) for h, w in [(56, 56), (30, 90), (99, 41)]]
    videos, kwargs = model._video_inputs(clips)
    inputs = model.processor(text=[model.render_prompt("Main Action")] * len(clips), videos=videos, padding=True,
                             padding_side="left", return_tensors="pt", **kwargs)
    assert bool(inputs["attention_mask"].all())
    assert (inputs["input_ids"] == model._pair_layout("Main Action", anchor).ids).all()


def test_concept_words_that_spell_a_frame_token_are_not_shared(model):
    rng = np.random.default_rng(8)
    assert model._shared_tokens(clip(rng, 56, 56), [clip(rng, 56, 56)], "the </img> tag") is None


def test_running_out_of_gpu_memory_halves_the_candidate_batches_and_keeps_the_prefix(model, monkeypatch):
    rng = np.random.default_rng(9)
    anchor, raw = clip(rng, 56, 56), [clip(rng, 56, 56) for _ in range(4)]
    expected = unshared(model, anchor, raw, "Main Action")
    run = type(model)._suffix_answers

    def tight(self, layout, prefix, videos2):
        if len(videos2) > 1:
            raise torch.cuda.OutOfMemoryError("out of memory")
        return run(self, layout, prefix, videos2)

    monkeypatch.setattr(type(model), "_suffix_answers", tight)
    model.batch_size = 4
    model.work.clear()
    got = model._shared_tokens(anchor, raw, "Main Action")
    assert gap(expected, got) < TOLERANCE
    assert model.batch_size == 1 and model.work["prefix_passes"] == 1
