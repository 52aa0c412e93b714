"""Indexers under the two protocols: the paper's pooling, frames and pixels, checked against the
reference's formulas computed here from the model's raw outputs (ConViS-Bench extract_features.py:
the checkpoint's own image processor on full-size frames, ``last_hidden_state.mean(1)`` or
``get_image_features`` per frame, the mean over the video).

The reference ran transformers 4.41, whose image processors worked on PIL images; the installed
transformers keeps that code as the ``backend="pil"`` processors, which stand for it here. The tiny
checkpoints ship processors with the paper checkpoints' settings (sizes, filters, mean/std) and take
their 224-px crops, so every size and offset the paper's frames go through is covered."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from bench.tiny import vision as tm
from indexers import create_indexer
from indexers.base import INDEXERS
from indexers.factory import available_indexers
from retrieval.media.video_decoder import VideoDecoder
from tests.textured import SOURCE_SIZES

PAPER_FAMILIES = ("dinov2", "clip", "videomae")
# the filter each paper checkpoint's preprocessor_config.json names (resample 3 and 2)
PAPER_FILTERS = {"dinov2": "bicubic", "clip": "bicubic", "videomae": "bilinear"}
SIZE_IDS = [f"{w}x{h}" for w, h in SOURCE_SIZES]


def _for_input_size(folder, model_class, size: int):
    """The tiny checkpoint in ``folder`` rebuilt to take ``size``-px inputs (its position table is sized by them)."""
    config = model_class.config_class.from_pretrained(folder)
    getattr(config, "vision_config", config).image_size = size
    torch.manual_seed(0)
    model_class(config).save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def with_processors(tmp_path_factory):
    """Tiny checkpoints with the image processors of facebook/dinov2-large, openai/clip-vit-large-patch14 and
    MCG-NJU/videomae-large (DINOv2 interpolates its positions, so its tiny model takes 224 px as it is)."""
    from transformers import BitImageProcessor, CLIPImageProcessor, CLIPModel, VideoMAEImageProcessor, VideoMAEModel

    root = tmp_path_factory.mktemp("tiny-with-processors")
    imagenet = {"image_mean": [0.485, 0.456, 0.406], "image_std": [0.229, 0.224, 0.225]}
    crop = {"height": 224, "width": 224}
    dinov2 = tm.tiny_dinov2(root / "dinov2")
    BitImageProcessor(size={"shortest_edge": 256}, crop_size=crop, resample=3, **imagenet).save_pretrained(dinov2)
    clip = _for_input_size(tm.tiny_hf_clip(root / "clip"), CLIPModel, 224)
    CLIPImageProcessor(size={"shortest_edge": 224}, crop_size=crop, resample=3).save_pretrained(clip)
    videomae = _for_input_size(tm.tiny_videomae(root / "videomae"), VideoMAEModel, 224)
    VideoMAEImageProcessor(size={"shortest_edge": 224}, crop_size=crop, resample=2,
                           **imagenet).save_pretrained(videomae)
    return {"dinov2": dinov2, "clip": clip, "videomae": videomae}


@pytest.fixture(scope="module")
def paper_indexers(with_processors):
    return {name: create_indexer(f"{name}:{with_processors[name]}", protocol="paper") for name in PAPER_FAMILIES}


def _unit(x) -> np.ndarray:
    x = np.asarray(x, np.float64)
    return x / np.linalg.norm(x)


def _frames_for(indexer, path):
    _, units = VideoDecoder().sample(path, indexer.frame_spec)
    return units[0][1]


def _pil_processor(folder):
    from transformers import AutoImageProcessor

    processor = AutoImageProcessor.from_pretrained(folder, backend="pil")
    assert processor.backend == "pil"
    return processor


def _reference_inputs(name: str, folder, frames: list[np.ndarray]) -> torch.Tensor:
    """extract_features.py's processor call on the decoded frames: images for DINOv2 and CLIP, one video
    (a list of frames) for VideoMAE."""
    processor = _pil_processor(folder)
    if name == "videomae":
        return processor(list(frames), return_tensors="pt")["pixel_values"]
    return processor(images=frames, return_tensors="pt")["pixel_values"]


def _reference_vector(name: str, model, pixel_values: torch.Tensor) -> np.ndarray:
    """extract_features.py's features, then the mean over frames that its similarities take."""
    with torch.no_grad():
        if name == "videomae":
            return model(pixel_values=pixel_values).last_hidden_state.mean(dim=1)[0].numpy()
        if name == "dinov2":
            per_frame = model(pixel_values=pixel_values).last_hidden_state.mean(dim=1)
        else:
            per_frame = model.get_image_features(pixel_values=pixel_values)
            per_frame = per_frame if isinstance(per_frame, torch.Tensor) else per_frame.pooler_output
    return per_frame.mean(dim=0).numpy()


def _reference_indices(name: str, count: int) -> list[int]:
    if name != "videomae":
        return list(range(count))  # DINOv2 and CLIP: every frame
    # np.linspace(0, n-1, 4, dtype=int); a shorter clip: every frame, then the last repeated
    return (np.linspace(0, count - 1, 4, dtype=int).tolist() if count >= 4
            else list(range(count)) + [count - 1] * (4 - count))


@pytest.mark.parametrize("size", SOURCE_SIZES, ids=SIZE_IDS)
@pytest.mark.parametrize("name", PAPER_FAMILIES)
def test_paper_protocol_feeds_the_references_pixels_and_gets_its_vector(with_processors, paper_indexers,
                                                                         textured_clips, name, size):
    """The tensor the model receives equals the PIL processor's on the same decoded frames (atol 1e-6), and
    the unit's vector is the reference's up to fp32 arithmetic."""
    ix, clip = paper_indexers[name], textured_clips[size]
    assert ix.dtype == torch.float32 and ix.frame_spec.resize.resample == PAPER_FILTERS[name]
    frames = _frames_for(ix, clip.path)
    indices = _reference_indices(name, len(clip.frames))
    assert list(frames.indices) == indices
    assert frames.pixels.shape == (len(indices), 224, 224, 3)  # resized and cropped while decoding

    reference = _reference_inputs(name, with_processors[name], [clip.frames[i] for i in indices])
    ours = ix.transform(frames.pixels)  # what _run hands the model, per frame (VideoMAE: stacked as one clip)
    ours = ours[None] if name == "videomae" else ours
    assert ours.shape == reference.shape and ours.dtype == reference.dtype == torch.float32
    assert float((ours - reference).abs().max()) <= 1e-6

    vector = ix.embed_units([frames.pixels])[0]
    expected = _unit(_reference_vector(name, ix.model, reference))
    assert float(np.abs(vector - expected).max()) < 1e-5


def test_fast_dinov2_pools_tokens_as_the_reference_over_sampled_frames(with_processors, textured_clips):
    ix = create_indexer(f"dinov2:{with_processors['dinov2']}")
    assert ix.frame_spec.rule == "per-second" and ix.frames_per_unit == 8
    frames = _frames_for(ix, textured_clips[320, 180].path)
    assert frames.indices == (0, 6, 6, 6, 6, 6, 6, 6)  # 12 frames at 6 fps: one a second, padded
    with torch.no_grad():
        tokens = ix.model(pixel_values=ix.transform(frames.pixels)).last_hidden_state
    reference = tokens.mean(dim=1).mean(dim=0).numpy()  # every token, CLS included; then the frames
    assert float(np.abs(ix.embed_units([frames.pixels])[0] - _unit(reference)).max()) < 1e-5


@pytest.mark.parametrize("size", SOURCE_SIZES, ids=SIZE_IDS)
@pytest.mark.parametrize("protocol", ["fast", "paper"])
def test_videomae_sees_the_reference_clip(with_processors, textured_clips, size, protocol):
    clip = textured_clips[size]
    ix = create_indexer(f"videomae:{with_processors['videomae']}", protocol=protocol)
    # 12 frames: [0, 3, 7, 11]; 4: every one; 3: every one, then the last repeated
    assert list(_frames_for(ix, clip.path).indices) == _reference_indices("videomae", len(clip.frames))


def test_protocols_pick_the_papers_default_weights():
    available_indexers()
    assert INDEXERS.entry("videomae").source_for("paper") == "MCG-NJU/videomae-large"
    assert INDEXERS.entry("clip").source_for("paper") == "openai/clip-vit-large-patch14"
    assert INDEXERS.entry("dinov2").source_for("paper") == "facebook/dinov2-large"
    assert INDEXERS.entry("videomae").source_for("fast") == "MCG-NJU/videomae-base-finetuned-kinetics"
