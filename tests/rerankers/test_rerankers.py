"""Rerankers: the reference prompt, frame protocol, score math and the transformers code paths.

No real VLM weights exist here, so tiny random Qwen2-VL / Qwen2.5-VL / LLaVA-OneVision /
InternVL checkpoints are written to disk (bench/tiny/vlm.py) and loaded through the factory.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch

import rerankers
from rerankers.base import (
    RERANKERS,
    NextToken,
    PairScore,
    RerankerError,
    RerankerUnavailable,
    UnknownModelError,
    average_scores,
    expected_score,
    to_pair_score,
)
from rerankers.factory import create_reranker
from rerankers.frames import concat_pair
from rerankers.hf import answer_token_ids, revision_of
from rerankers.prompts.similarity import PROMPT_VERSION, build_chat, parse_score, system_prompt
from rerankers.qwen import reference_target_size, snap_to_grid
from tests.rerankers.spies import BATCHED, FAMILIES, ProcessorSpy

# --------------------------------------------------------------------------- fixtures



def frames(n: int, height: int = 48, width: int = 64, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (n, height, width, 3), dtype=np.uint8)


def flat(n: int, value: int, height: int = 48, width: int = 64) -> np.ndarray:
    return np.full((n, height, width, 3), value, dtype=np.uint8)


def numbered(n: int, start: int = 0, height: int = 48, width: int = 64) -> np.ndarray:
    """Frame i is a flat image of value start + 10 * i, so the frames fed can be read back."""
    values = start + 10 * np.arange(n, dtype=np.uint8)
    return np.broadcast_to(values[:, None, None, None], (n, height, width, 3)).copy()


class FixedHead(torch.nn.Module):
    """An lm_head whose logits are the same known vector at every position."""

    def __init__(self, logits: torch.Tensor):
        super().__init__()
        self.register_buffer("logits", logits)
        self.out_features = len(logits)

    def forward(self, hidden):
        return self.logits.to(hidden.dtype).expand(*hidden.shape[:-1], -1).clone()


def spied(reranker) -> ProcessorSpy:
    reranker.processor = ProcessorSpy(reranker.processor)
    return reranker.processor


def set_answer_logits(reranker, digit_logits, *, extra: dict[str, float] | None = None, floor: float = -20.0):
    vocab = reranker.model.lm_head.out_features
    logits = torch.full((vocab,), floor)
    logits[reranker.answer_ids] = torch.tensor(digit_logits, dtype=torch.float32)
    for token, value in (extra or {}).items():
        logits[reranker.processor.tokenizer.convert_tokens_to_ids(token)] = value
    reranker.model.lm_head = FixedHead(logits)


def sharpen(reranker, factor: float = 10.0) -> None:
    # random tiny models answer near-uniformly; scaling the head spreads the answers apart
    with torch.no_grad():
        reranker.model.lm_head.weight.mul_(factor)


# --------------------------------------------------------------------------- prompt

REFERENCE_MAIN_ACTION = (
    "You are an AI designed to compare two videos based on the visual concept of 'Main Action'.\n"
    "\n"
    "The input consists of a sequence of concatenated frames: the first half represents Video 1, and the "
    "second half represents Video 2.\n"
    "Your task is to evaluate how similar these two videos are with respect to the concept 'Main Action'.\n"
    "Output a single similarity score between 1 and 5, where 1 means completely different and 5 means "
    "perfectly similar in terms of 'Main Action'.\n"
    "Do not explain your reasoning. Only output the numerical score.\n"
)


def test_system_prompt_is_the_reference_text():
    assert system_prompt("Main Action") == REFERENCE_MAIN_ACTION
    # free-text concepts go in verbatim (whitespace normalised)
    assert "concept of 'camera angle'." in system_prompt("  camera   angle ")
    assert system_prompt("Location").count("'Location'") == 3
    with pytest.raises(ValueError):
        system_prompt("  ")


def test_chat_layouts_put_the_prompt_where_the_reference_does():
    qwen = build_chat("qwen", "Location")
    assert qwen[0] == {"role": "system", "content": system_prompt("Location")}
    assert qwen[1]["content"] == [
        {"type": "text", "text": "Output a similarity score from 1 to 5."},
        {"type": "video"},
    ]
    llava = build_chat("llava", "Location")
    assert llava[0]["content"] == [{"type": "text", "text": "You are a helpful assistant."}]
    assert llava[1]["content"] == [{"type": "video"}, {"type": "text", "text": system_prompt("Location")}]
    internvl = build_chat("internvl", "Location")
    assert [c["type"] for c in internvl[1]["content"]] == ["text", "video", "text"]
    assert internvl[1]["content"][0]["text"] == system_prompt("Location") + "\n"
    with pytest.raises(ValueError):
        build_chat("nope", "Location")


@pytest.mark.parametrize(
    "answer, expected",
    [
        ("3", 3),
        (" 5\n", 5),
        ("1", 1),
        ("4.", 4),
        ("4.0", 4),
        ("Score: 2", 2),
        ("2/5", 2),
        ("5 - very similar", 5),
        ("0", None),
        ("6", None),
        ("10", None),
        ("-3", None),
        ("3.5", None),
        ("five", None),
        ("", None),
        ("  ", None),
        (None, None),
    ],
)
def test_parse_score(answer, expected):
    assert parse_score(answer) == expected


# --------------------------------------------------------------------------- score math


def test_expected_score_from_known_logits():
    # softmax of log(1..5) is (1..5)/15, so the expectation is (1+4+9+16+25)/15
    score, probs = expected_score([math.log(k) for k in range(1, 6)])
    assert probs == pytest.approx([k / 15 for k in range(1, 6)], abs=1e-12)
    assert score == pytest.approx(55 / 15, abs=1e-12)
    # only differences between the five logits matter
    assert expected_score([100.0 + math.log(k) for k in range(1, 6)])[0] == pytest.approx(55 / 15)
    assert expected_score([0.0] * 5)[0] == pytest.approx(3.0)
    assert expected_score([0, 0, 0, 0, 50])[0] == pytest.approx(5.0, abs=1e-9)
    with pytest.raises(ValueError):
        expected_score([0.0, 1.0])
    with pytest.raises(ValueError):
        expected_score([0.0, 0.0, float("nan"), 0.0, 0.0])


def test_pair_score_modes():
    token = NextToken(np.array([0.0, 0.0, 0.0, 0.0, 0.0]), "4")
    assert to_pair_score(token, "greedy") == PairScore(4.0, "greedy", "4", None)
    expected = to_pair_score(token, "expected")
    assert expected.score == pytest.approx(3.0) and expected.raw == "4" and len(expected.probs) == 5
    # an unreadable greedy answer is None, never 0
    assert to_pair_score(NextToken(np.zeros(5), "The"), "greedy").score is None
    with pytest.raises(ValueError):
        to_pair_score(token, "sampled")


def test_average_scores():
    a = PairScore(2.0, "expected", "2", (0.0, 1.0, 0.0, 0.0, 0.0))
    b = PairScore(4.0, "expected", "4", (0.0, 0.0, 0.0, 1.0, 0.0))
    both = average_scores(a, b)
    assert both.score == pytest.approx(3.0)
    assert both.probs == pytest.approx((0.0, 0.5, 0.0, 0.5, 0.0))
    assert average_scores(PairScore(None, "greedy", "x"), PairScore(4.0, "greedy", "4")).score == 4.0
    assert average_scores(PairScore(2.0, "greedy", "2"), PairScore(5.0, "greedy", "5")).score == 3.5
    assert average_scores(PairScore(None, "greedy", "x"), PairScore(None, "greedy", "y")).score is None
    with pytest.raises(ValueError):
        average_scores(a, PairScore(4.0, "greedy", "4"))


# --------------------------------------------------------------------------- frames


def test_concat_pair_uses_reference_indices_and_padding():
    clip = concat_pair(numbered(20), numbered(3, start=200), per_video=8)
    # gap = 20/8: int(i * 2.5 + 1.25); the 3-frame video is padded with its last frame
    assert clip[:, 0, 0, 0].tolist() == [10 * i for i in (1, 3, 6, 8, 11, 13, 16, 18)] + [
        200 + 10 * i for i in (0, 1, 2, 2, 2, 2, 2, 2)
    ]


def test_concat_pair_resizes_video_2_to_video_1_and_validates():
    clip = concat_pair(frames(8, 48, 64), frames(8, 30, 40), per_video=8)
    assert clip.shape == (16, 48, 64, 3) and clip.dtype == np.uint8
    with pytest.raises(ValueError):
        concat_pair(frames(8)[..., 0], frames(8), per_video=8)
    with pytest.raises(ValueError):
        concat_pair(frames(0), frames(8), per_video=8)


def test_qwen_frame_geometry_follows_the_reference():
    # 640x360: the pixel budget floors at 128*28*28; 237x421 snaps to the 28-pixel grid
    assert reference_target_size(360, 640, 8) == (237, 421)
    assert snap_to_grid(237, 421, 28) == (224, 420)
    assert reference_target_size(48, 64, 8) == (274, 365)
    assert snap_to_grid(274, 365, 28) == (280, 364)
    # a 4K frame has a budget above the floor
    height, width = reference_target_size(2160, 3840, 8)
    assert 128 * 28 * 28 < height * width <= 768 * 28 * 28


# --------------------------------------------------------------------------- factory and errors


def test_registry_names_and_claims():
    names = rerankers.available_rerankers()
    for name in ("qwen2.5-vl", "qwen2.5-vl-3b", "qwen2-vl", "llava-onevision", "llava-video", "internvl"):
        assert name in names
    claims = {
        "qwen2.5-vl": ("qwen2.5-vl", "Qwen/Qwen2.5-VL-7B-Instruct"),
        "Qwen/Qwen2.5-VL-3B-Instruct": ("qwen2.5-vl", "Qwen/Qwen2.5-VL-3B-Instruct"),
        "Qwen/Qwen2-VL-2B-Instruct": ("qwen2-vl", "Qwen/Qwen2-VL-2B-Instruct"),
        "llava-hf/llava-onevision-qwen2-0.5b-ov-hf": ("llava-onevision", "llava-hf/llava-onevision-qwen2-0.5b-ov-hf"),
        "llava-hf/LLaVA-Video-7B-Qwen2-hf": ("llava-video", "llava-hf/LLaVA-Video-7B-Qwen2-hf"),
        "OpenGVLab/InternVL3-8B-hf": ("internvl", "OpenGVLab/InternVL3-8B-hf"),
        "llava-ov:some/where": ("llava-onevision", "some/where"),
    }
    for spec, (name, source) in claims.items():
        resolved = RERANKERS.resolve(spec)
        assert (resolved.entry.name, resolved.source or resolved.entry.default_source) == (name, source), spec


def test_unknown_spec_is_a_clear_error():
    with pytest.raises(UnknownModelError, match="unknown reranker 'gpt-vision'"):
        create_reranker("gpt-vision")


@pytest.mark.parametrize("spec", ["/no/such/weights", "qwen2.5-vl:/no/such/weights", "internvl:./no/such"])
def test_missing_local_folder_is_a_clear_error(spec):
    with pytest.raises(RerankerUnavailable) as err:
        create_reranker(spec)
    assert "no such" in str(err.value) or "no weights folder" in str(err.value)
    assert "\n" not in str(err.value)


def test_missing_hub_weights_offline_is_a_clear_error(monkeypatch):
    import huggingface_hub.constants

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    with pytest.raises(RerankerUnavailable) as err:
        create_reranker("qwen2.5-vl:convis-tests/no-such-model")
    message = str(err.value)
    assert "convis-tests/no-such-model" in message and "HF_HOME" in message and "\n" not in message


def test_checkpoint_of_another_architecture_is_a_clear_error(tmp_path):
    # the original LLaVA-Video release is a model_type "llava" checkpoint transformers cannot load
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "llava"}))
    with pytest.raises(RerankerUnavailable, match="'llava' checkpoint"):
        create_reranker(f"llava-video:{tmp_path}")


def test_answer_tokens_must_be_single_tokens():
    class SplittingTokenizer:
        def encode(self, text, add_special_tokens=False):
            return [7, 8]

    with pytest.raises(RerankerError, match="splits the answer '1'"):
        answer_token_ids(SplittingTokenizer())


def test_revision_of_local_folder_and_hub_snapshot(tmp_path):
    folder = tmp_path / "weights"
    folder.mkdir()
    (folder / "config.json").write_text('{"model_type": "qwen2_vl"}')
    (folder / "model.safetensors").write_bytes(b"x" * 10)
    first = revision_of(folder / "config.json")
    assert first.startswith("local-") and first == revision_of(folder / "config.json")
    (folder / "model.safetensors").write_bytes(b"x" * 11)
    assert revision_of(folder / "config.json") != first
    snapshot = tmp_path / "models--org--name" / "snapshots" / "0123abcd"
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_text("{}")
    assert revision_of(snapshot / "config.json") == "0123abcd"


# --------------------------------------------------------------------------- tiny models end to end


@pytest.mark.parametrize(
    "family, name, cls_name, per_video",
    [
        ("qwen2_vl", "qwen2-vl", "QwenReranker", 8),
        ("qwen2_5_vl", "qwen2.5-vl", "QwenReranker", 8),
        ("llava", "llava-onevision", "LlavaReranker", 16),
        ("internvl", "internvl", "InternVLReranker", 16),
    ],
)
def test_local_folder_builds_the_right_family(tiny_folders, family, name, cls_name, per_video):
    reranker = create_reranker(str(tiny_folders[family]))
    assert type(reranker).__name__ == cls_name
    assert reranker.name == name and reranker.frames_per_video == per_video
    assert reranker.model_id == f"{name}:{tiny_folders[family]}"
    assert reranker.revision.startswith("local-")
    assert PROMPT_VERSION in reranker.cache_tag and reranker.revision in reranker.cache_tag
    # CPU: fp32 weights
    assert reranker.dtype == torch.float32 and next(reranker.model.parameters()).dtype == torch.float32
    tokens = reranker.processor.tokenizer.convert_ids_to_tokens(reranker.answer_ids)
    assert tokens == ["1", "2", "3", "4", "5"]


def test_rendered_prompts_match_the_reference_conversations(tiny_folders):
    sys = system_prompt("Main Objects")
    qwen = create_reranker(str(tiny_folders["qwen2_5_vl"]))
    assert qwen.render_prompt("Main Objects") == (
        f"<|im_start|>system\n{sys}<|im_end|>\n"
        "<|im_start|>user\nOutput a similarity score from 1 to 5."
        "<|vision_start|><|video_pad|><|vision_end|><|im_end|>\n<|im_start|>assistant\n"
    )
    # llava's qwen_1_5 conversation, with the frames token as <video>
    llava = create_reranker(str(tiny_folders["llava"]))
    assert llava.render_prompt("Main Objects") == (
        "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
        f"<|im_start|>user\n<video>\n{sys}<|im_end|>\n<|im_start|>assistant\n"
    )


def test_internvl_prompt_has_the_reference_frame_lines(tiny_folders):
    reranker = create_reranker(str(tiny_folders["internvl"]), frames_per_video=2)
    spy = spied(reranker)
    reranker.score_pairs([(frames(2), frames(2, seed=1))], "Location")
    text = reranker.processor.tokenizer.decode(spy.calls[0][1]["input_ids"][0])
    frame = "<img><IMG_CONTEXT></img>"
    assert text.endswith(
        f"{system_prompt('Location')}\n"
        f"Frame1: {frame}\nFrame2: {frame}\nFrame3: {frame}\nFrame4: {frame}\n"
        "Output a similarity score from 1 to 5.<|im_end|>\n<|im_start|>assistant\n"
    )
    assert "<|im_start|>system\n你是书生·万象" in text


def _reference_indices(family: str, n: int, per_video: int) -> list[int]:
    """The reference's frame choice over ``n`` given frames, written out independently of convis."""
    if family == "llava":  # llavaov_model.load_video
        return np.linspace(0, n - 1, per_video, dtype=int).tolist()
    if family == "internvl":  # internvl2_5_model.get_video_index, bound=None
        seg = float(n - 1) / per_video
        return [int(seg / 2 + np.round(seg * k)) for k in range(per_video)]
    gap = n / per_video  # Qwen: uniform_sample, padded with the last frame when short
    return [int(i * gap + gap / 2) for i in range(per_video)] if n >= per_video else \
        list(range(n)) + [n - 1] * (per_video - n)


@pytest.mark.parametrize(
    "family, shape",
    [("qwen2_vl", (16, 280, 364, 3)), ("llava", (32, 28, 28, 3)), ("internvl", (32, 28, 28, 3))],
)
def test_frames_fed_to_the_processor(tiny_folders, family, shape):
    reranker = create_reranker(str(tiny_folders[family]))
    spy = spied(reranker)
    (score,) = reranker.score_pairs([(numbered(20), numbered(3, start=200))], "Main Action")
    (kwargs, _), = spy.calls
    (video,) = kwargs["videos"]
    # Qwen frames arrive at the reference's grid-aligned size, LLaVA/InternVL at the processor's square
    assert video.shape == shape and score.evidence == {"size": list(shape[1:3])}
    per_video = shape[0] // 2
    expected = [10 * i for i in _reference_indices(family, 20, per_video)] + \
        [200 + 10 * i for i in _reference_indices(family, 3, per_video)]
    assert np.abs(video.reshape(shape[0], -1).mean(axis=1) - expected).max() < 1.0
    assert kwargs["do_sample_frames"] is False


def test_qwen2_5_video_clock_is_the_reference_default(tiny_folders):
    reranker = create_reranker(str(tiny_folders["qwen2_5_vl"]))
    spy = spied(reranker)
    reranker.score_pairs([(frames(8), frames(8, seed=1))], "Location")
    # temporal_patch_size / fps with the 2 fps the reference's processor assumed
    assert spy.calls[0][1]["second_per_grid_ts"].tolist() == [1.0]


def test_frames_per_video_can_be_overridden(tiny_folders):
    reranker = create_reranker(str(tiny_folders["llava"]), frames_per_video=4)
    spy = spied(reranker)
    reranker.score_pairs([(frames(9), frames(2))], "Location")
    assert spy.calls[0][0]["videos"][0].shape[0] == 8


@pytest.mark.parametrize("family", FAMILIES)
def test_expected_and_greedy_scores_from_known_logits(tiny_folders, family):
    reranker = create_reranker(str(tiny_folders[family]), frames_per_video=2)
    set_answer_logits(reranker, [math.log(k) for k in range(1, 6)])
    pairs = [(frames(8), frames(5, seed=1)), (frames(3, seed=2), frames(12, seed=3))]
    for score in reranker.score_pairs(pairs, "Main Subjects"):
        assert score.mode == "expected"
        assert score.score == pytest.approx(55 / 15, abs=1e-5)
        assert score.probs == pytest.approx([k / 15 for k in range(1, 6)], abs=1e-6)
    greedy = reranker.score_pairs(pairs, "Main Subjects", mode="greedy")
    assert [(s.score, s.raw, s.probs) for s in greedy] == [(5.0, "5", None)] * 2
    # the greedy token is not a number: unparseable (None), while the expectation is unchanged
    set_answer_logits(reranker, [math.log(k) for k in range(1, 6)], extra={"a": 5.0})
    (greedy,) = reranker.score_pairs(pairs[:1], "Main Subjects", mode="greedy")
    assert greedy.score is None and greedy.raw == "a"
    (expected,) = reranker.score_pairs(pairs[:1], "Main Subjects")
    assert expected.score == pytest.approx(55 / 15, abs=1e-5) and expected.raw == "a"


@pytest.mark.parametrize("family", BATCHED)
def test_batching_gives_the_same_scores_as_one_by_one(tiny_folders, family):
    # 2 frames a video keeps the Qwen clips (at the reference's pixel budget) quick to run
    reranker = create_reranker(str(tiny_folders[family]), batch_size=3, frames_per_video=2)
    sharpen(reranker)
    # different aspect ratios give Qwen clips of different token counts: the batch is left-padded
    pairs = [
        (flat(2, 20, 36, 64), flat(3, 230, 36, 64)),
        (frames(6, 48, 64, seed=2), flat(2, 230, 48, 64)),
        (flat(2, 230, 64, 48), frames(2, 64, 48, seed=5)),
    ]
    spy = spied(reranker)
    batched = reranker.score_pairs(pairs, "Location")
    assert len(spy.calls) == 1
    if family.startswith("qwen"):
        assert spy.calls[0][1]["attention_mask"].min() == 0  # padding really happened
    reranker.batch_size = 1
    single = reranker.score_pairs(pairs, "Location")
    assert len(spy.calls) == 4
    for b, s in zip(batched, single, strict=False):
        assert b.probs == pytest.approx(s.probs, abs=1e-5)
        assert b.score == pytest.approx(s.score, abs=1e-5)
    spread = np.ptp(np.array([s.probs for s in single]), axis=0).max()
    assert spread > 5e-4  # the pairs score differently, so the comparison means something


def test_symmetric_averages_both_orders(tiny_folders):
    reranker = create_reranker(str(tiny_folders["qwen2_vl"]))
    sharpen(reranker)
    a, b = frames(8, seed=10), frames(8, seed=11)
    (ab,) = reranker.score_pairs([(a, b)], "Order of Actions")
    (ba,) = reranker.score_pairs([(b, a)], "Order of Actions")
    assert abs(ab.score - ba.score) > 1e-4  # the order matters to the model
    sym = average_scores(ab, ba)  # what a symmetric query reports (PairScorer averages the two orders)
    assert sym.score == pytest.approx((ab.score + ba.score) / 2, abs=1e-5)
    assert sym.probs == pytest.approx((np.array(ab.probs) + np.array(ba.probs)) / 2, abs=1e-6)


def test_bad_mode_and_concept_are_rejected(tiny_folders):
    reranker = create_reranker(str(tiny_folders["llava"]))
    with pytest.raises(ValueError, match="scoring mode"):
        reranker.score_pairs([(frames(2), frames(2))], "Location", mode="sampled")
    with pytest.raises(ValueError, match="concept_words"):
        reranker.score_pairs([(frames(2), frames(2))], " ")
    assert reranker.score_pairs([], "Location") == []
