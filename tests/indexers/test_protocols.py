"""Indexers under the two protocols: the paper's pooling, frames and pixels, checked against the
reference's formulas computed here from the model's raw outputs (ConViS-Bench extract_features.py:
the checkpoint's own image processor on full-size frames, ``last_hidden_state.mean(1)`` or
``get_image_features`` per frame, the mean over the video)."""

from __future__ import annotations

import av
import numpy as np
import pytest
import torch

from bench.tiny import vision as tm
from indexers import create_indexer
from indexers.base import INDEXERS
from indexers.factory import available_indexers
from retrieval.media.video_decoder import VideoDecoder
from tests import media


@pytest.fixture(scope="module")
def with_processors(tmp_path_factory):
    """Tiny checkpoints that ship an image processor, as the hub's do (small sizes keep them fast)."""
    from transformers import BitImageProcessor, CLIPImageProcessor, VideoMAEImageProcessor

    root = tmp_path_factory.mktemp("tiny-with-processors")
    dinov2 = tm.tiny_dinov2(root / "dinov2")
    BitImageProcessor(size={"shortest_edge": 64}, crop_size={"height": 56, "width": 56},
                      image_mean=[0.485, 0.456, 0.406], image_std=[0.229, 0.224, 0.225]).save_pretrained(dinov2)
    clip = tm.tiny_hf_clip(root / "clip")
    CLIPImageProcessor(size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32}).save_pretrained(clip)
    videomae = tm.tiny_videomae(root / "videomae")
    VideoMAEImageProcessor(size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32},
                           image_mean=[0.485, 0.456, 0.406], image_std=[0.229, 0.224, 0.225]).save_pretrained(videomae)
    return {"dinov2": dinov2, "clip": clip, "videomae": videomae}


def _textured(i: int, size=(80, 60)) -> np.ndarray:
    """A frame with structure (so resizing matters) that changes with ``i``."""
    width, height = size
    y, x = np.mgrid[0:height, 0:width]
    image = np.stack([(x * 3 + i * 7) % 256, (y * 5 + i * 11) % 256, ((x + y) * 2 + i * 13) % 256], -1)
    return image.astype(np.uint8)


@pytest.fixture(scope="module")
def clip_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("protocol-clip") / "clip.mp4"
    return media.make_clip(path, frames=12, fps=6, size=(80, 60), pixels=_textured, gop=4)


def every_frame(path) -> list[np.ndarray]:
    """Every decoded frame at full size, as decord's get_batch(range(len)) gives them."""
    with av.open(str(path)) as container:
        return [f.to_ndarray(format="rgb24") for f in container.decode(video=0)]


def _cos(a, b) -> float:
    return float(np.dot(a, b) / np.linalg.norm(a) / np.linalg.norm(b))


def _frames_for(indexer, path):
    _, units = VideoDecoder().sample(path, indexer.frame_spec)
    return units[0][1]


@pytest.mark.parametrize("name", ["dinov2", "clip"])
def test_paper_protocol_embeds_every_frame_as_the_reference(with_processors, clip_file, name):
    from transformers import AutoImageProcessor

    folder = with_processors[name]
    ix = create_indexer(f"{name}:{folder}", protocol="paper")
    assert ix.frame_spec.rule == "every" and ix.dtype == torch.float32
    frames = _frames_for(ix, clip_file)
    assert frames.indices == tuple(range(12))  # every frame
    crop = 56 if name == "dinov2" else 32
    assert frames.pixels.shape == (12, crop, crop, 3)  # resized and cropped while decoding
    ours = ix.embed_units([frames.pixels])[0]

    processor = AutoImageProcessor.from_pretrained(folder)
    inputs = processor(images=every_frame(clip_file), return_tensors="pt")
    with torch.no_grad():
        if name == "dinov2":
            per_frame = ix.model(**inputs).last_hidden_state.mean(dim=1)
        else:
            per_frame = ix.model.get_image_features(**inputs)
            per_frame = per_frame if isinstance(per_frame, torch.Tensor) else per_frame.pooler_output
    reference = per_frame.mean(dim=0).numpy()
    assert _cos(ours, reference) > 0.999


def test_fast_dinov2_pools_tokens_as_the_reference_over_sampled_frames(with_processors, clip_file):
    ix = create_indexer(f"dinov2:{with_processors['dinov2']}")
    assert ix.frame_spec.rule == "per-second" and ix.frames_per_unit == 8
    frames = _frames_for(ix, clip_file)
    assert frames.indices == (0, 6, 6, 6, 6, 6, 6, 6)  # 12 frames at 6 fps: one a second, padded
    with torch.no_grad():
        tokens = ix.model(pixel_values=ix.transform(frames.pixels)).last_hidden_state
    reference = tokens.mean(dim=1).mean(dim=0).numpy()  # every token, CLS included; then the frames
    assert _cos(ix.embed_units([frames.pixels])[0], reference) > 0.9999


@pytest.mark.parametrize("frames, expected", [(12, [0, 3, 7, 11]), (3, [0, 1, 2, 2])])
@pytest.mark.parametrize("protocol", ["fast", "paper"])
def test_videomae_sees_the_reference_clip(with_processors, tmp_path, frames, expected, protocol):
    from transformers import AutoImageProcessor

    path = media.make_clip(tmp_path / "v.mp4", frames=frames, fps=6, size=(80, 60), pixels=_textured, gop=4)
    ix = create_indexer(f"videomae:{with_processors['videomae']}", protocol=protocol)
    clip = _frames_for(ix, path)
    # np.linspace(0, n-1, 4, dtype=int); a shorter clip: every frame, then the last repeated
    assert list(clip.indices) == expected == (np.linspace(0, frames - 1, 4, dtype=int).tolist() if frames >= 4
                                              else list(range(frames)) + [frames - 1] * (4 - frames))
    if protocol == "paper":
        full = every_frame(path)
        inputs = AutoImageProcessor.from_pretrained(with_processors["videomae"])([full[i] for i in expected],
                                                                                  return_tensors="pt")
        with torch.no_grad():
            reference = ix.model(**inputs).last_hidden_state.mean(dim=1)[0].numpy()
        assert _cos(ix.embed_units([clip.pixels])[0], reference) > 0.999


def test_protocols_pick_the_papers_default_weights():
    available_indexers()
    assert INDEXERS.entry("videomae").source_for("paper") == "MCG-NJU/videomae-large"
    assert INDEXERS.entry("clip").source_for("paper") == "openai/clip-vit-large-patch14"
    assert INDEXERS.entry("dinov2").source_for("paper") == "facebook/dinov2-large"
    assert INDEXERS.entry("videomae").source_for("fast") == "MCG-NJU/videomae-base-finetuned-kinetics"


def test_videomae_paper_pixels_are_the_pil_processors(with_processors, tmp_path):
    """The reference fed VideoMAE through VideoMAEImageProcessor's PIL path (resample=2, bilinear): the paper
    protocol's pixels equal that processor's, computed here from every decoded frame on its own."""
    from transformers.models.videomae.image_processing_pil_videomae import VideoMAEImageProcessorPil

    path = media.make_clip(tmp_path / "v.mp4", frames=12, fps=6, size=(80, 60), pixels=_textured, gop=4)
    ix = create_indexer(f"videomae:{with_processors['videomae']}", protocol="paper")
    assert ix.frame_spec.resize.resample == "bilinear"
    clip = _frames_for(ix, path)
    full = every_frame(path)
    processor = VideoMAEImageProcessorPil(size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32},
                                          image_mean=[0.485, 0.456, 0.406], image_std=[0.229, 0.224, 0.225])
    reference = processor([full[i] for i in clip.indices], return_tensors="pt")["pixel_values"][0]
    ours = ix.transform(clip.pixels)
    assert ours.shape == reference.shape and float((ours - reference).abs().max()) < 1e-5
