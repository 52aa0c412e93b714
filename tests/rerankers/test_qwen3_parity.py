"""Qwen3-VL parity: what convis feeds the model for a pair equals what the checkpoint's own ``Qwen3VLProcessor``
makes of the same frames, called the documented way.

Raw noise frames (a resize filter shows on noise) go through ``score_pairs`` unprepared: convis resamples them,
sizes them by its rule (``rerankers.qwen3.Qwen3ClipPixels``) and hands the processor resized frames with
``do_resize=False``; a spy at ``model.generate`` takes ``input_ids``, ``pixel_values_videos`` and ``video_grid_thw``
there. The expected values come from the processor given the full-size 16-frame clip, its own resize on
(``cap_pixels_per_frame=True``, the qwen-vl-utils cap) and the metadata convis states: 1 frame a second, video 1's
frames then video 2's, so the prompt's ``<t seconds>`` come from the processor's own timestamp rule.

Sizes are Qwen3-VL's (patch 16 merged 2x2: a 32-px grid), not the 28-px sizes of the Qwen2.5-VL tests; each is
checked under the tiny checkpoint's video processor (the class defaults: the per-frame floor, 1.05 x
``shortest_edge``, binds) and under Qwen3-VL-8B-Instruct's ``size`` (4096..25165824 px: the 768-token frame cap
binds for HD).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from bench.tiny import vlm as tiny_vlm
from rerankers.factory import create_reranker
from tests.rerankers.spies import GenerateSpy, ModelCalled
from tests.rerankers.test_runtime import edit_processor
from tests.tiny_rerankers import noise

ATOL = 1e-6
PER_VIDEO = 8
# (height, width): a small wide clip off the 32-px grid, a 4:3 clip, an HD clip (the per-frame cap binds)
SIZES = [(180, 320), (240, 320), (720, 1280)]
# the video processor's size bounds: the tiny checkpoint's (the class defaults) and Qwen3-VL-8B-Instruct's
BOUNDS = {"tiny": None, "8b": {"shortest_edge": 4096, "longest_edge": 25165824}}


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    """A tiny Qwen3-VL checkpoint for each size bound, built on first use."""
    root, built = tmp_path_factory.mktemp("qwen3-parity"), {}

    def get(bounds: str):
        if bounds not in built:
            folder = tiny_vlm.build_qwen3_vl(root / bounds)
            if BOUNDS[bounds] is not None:
                edit_processor(folder, "video_processor", size=BOUNDS[bounds])
            built[bounds] = folder
        return built[bounds]

    return get


def fed_to_model(reranker, pairs, monkeypatch) -> dict:
    """The tensors ``generate`` receives when the pairs are scored from raw frames (one batch)."""
    spy = GenerateSpy()
    monkeypatch.setattr(reranker.model, "generate", spy)
    with pytest.raises(ModelCalled):
        reranker.score_pairs(pairs, "Location")
    (inputs,) = spy.calls
    return inputs


def processor_reference(reranker, clip: np.ndarray) -> dict:
    """The checkpoint's processor on a full-size clip of ``2 * PER_VIDEO`` frames taken 1 a second: its own
    resize (the qwen-vl-utils per-frame cap on), its own timestamps from the metadata."""
    metadata = {"total_num_frames": len(clip), "fps": 1.0, "frames_indices": list(range(len(clip)))}
    return reranker.processor(text=[reranker.render_prompt("Location")], videos=[clip], video_metadata=[metadata],
                              do_sample_frames=False, cap_pixels_per_frame=True, return_tensors="pt")


def assert_same_inputs(got: dict, want: dict) -> None:
    assert got["input_ids"].tolist() == want["input_ids"].tolist()  # the video tokens and the timestamps
    assert got["video_grid_thw"].tolist() == want["video_grid_thw"].tolist()
    assert got["pixel_values_videos"].dtype == torch.float32
    np.testing.assert_allclose(got["pixel_values_videos"].numpy(), want["pixel_values_videos"].numpy(),
                               rtol=0, atol=ATOL)


@pytest.mark.parametrize("bounds", list(BOUNDS))
@pytest.mark.parametrize("size", SIZES, ids=[f"{h}x{w}" for h, w in SIZES])
def test_a_pair_is_fed_what_the_processor_makes_of_its_frames(folders, monkeypatch, bounds, size):
    reranker = create_reranker(str(folders(bounds)), device="cpu")
    a, b = noise(PER_VIDEO, *size, seed=0), noise(PER_VIDEO, *size, seed=1)
    got = fed_to_model(reranker, [(a, b)], monkeypatch)
    want = processor_reference(reranker, np.concatenate([a, b]))
    assert_same_inputs(got, want)
    text = reranker.processor.tokenizer.decode(got["input_ids"][0])
    assert [f"<{t:.1f} seconds>" in text for t in (0.5, 2.5, 14.5)] == [True] * 3  # video 2 after video 1


def test_each_pair_of_a_batch_is_fed_what_the_processor_makes_of_it(folders, monkeypatch):
    # one processor call for two pairs of other sizes: each clip sized on its own, left-padded to one length
    reranker = create_reranker(str(folders("8b")), device="cpu", batch_size=2)
    pairs = [(noise(PER_VIDEO, *size, seed=2 * i), noise(PER_VIDEO, *size, seed=2 * i + 1))
             for i, size in enumerate(SIZES[:2])]
    got = fed_to_model(reranker, pairs, monkeypatch)
    wants = [processor_reference(reranker, np.concatenate(pair)) for pair in pairs]
    longest = max(w["input_ids"].shape[1] for w in wants)
    pad = reranker.processor.tokenizer.pad_token_id
    padded = [[pad] * (longest - w["input_ids"].shape[1]) + w["input_ids"][0].tolist() for w in wants]
    assert got["input_ids"].tolist() == padded
    assert got["video_grid_thw"].tolist() == [w["video_grid_thw"][0].tolist() for w in wants]
    np.testing.assert_allclose(got["pixel_values_videos"].numpy(),
                               torch.cat([w["pixel_values_videos"] for w in wants]).numpy(), rtol=0, atol=ATOL)


def test_video_2_of_another_size_leaves_video_1_as_the_processor_makes_it(folders, monkeypatch):
    # the clip takes video 1's size; video 1's pixel rows, the grid and the ids are the processor's for video 1
    reranker = create_reranker(str(folders("8b")), device="cpu")
    a = noise(PER_VIDEO, *SIZES[0], seed=0)
    got = fed_to_model(reranker, [(a, noise(PER_VIDEO, *SIZES[2], seed=1))], monkeypatch)
    want = processor_reference(reranker, np.concatenate([a, a]))
    assert got["input_ids"].tolist() == want["input_ids"].tolist()
    assert got["video_grid_thw"].tolist() == want["video_grid_thw"].tolist()
    half = len(want["pixel_values_videos"]) // 2
    np.testing.assert_allclose(got["pixel_values_videos"][:half].numpy(), want["pixel_values_videos"][:half].numpy(),
                               rtol=0, atol=ATOL)
