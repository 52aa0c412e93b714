"""PE-Core and SigLIP2 (open_clip): fed exactly the pixels open_clip's own transform makes of the weights' config,
their tiny checkpoints load by family, and their text towers search an index through the ONNX export."""

from __future__ import annotations

import json
import shutil

import numpy as np
import open_clip
import pytest
import torch
from PIL import Image
from typer.testing import CliRunner

from bench.tiny import vision as tm
from indexers import create_indexer
from indexers.base import INDEXERS
from indexers.clip import open_clip_tokenizer
from indexers.text_export import PROBES, export
from retrieval.cli.app import app
from retrieval.core.pixels import FixedResize, ShortSideResize
from retrieval.media.video_decoder import VideoDecoder
from tests.textured import SOURCE_SIZES

FAMILIES = {"pe": tm.tiny_pe, "siglip2": tm.tiny_siglip2}
FILTERS = {"pe": "bilinear", "siglip2": "bicubic"}  # the released weights' preprocess_cfg interpolation
TEXTS = ["a hand holding a cup", "Two bikes lean on a wall, in the rain!", "snake_case & CAPS -- 21 °C",
         "kayaking on a lake " * 20]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    root = tmp_path_factory.mktemp("tiny-image-text")
    return {name: build(root / name / "tiny") for name, build in FAMILIES.items()}


@pytest.fixture(scope="module")
def indexers(tiny):
    return {name: create_indexer(f"{name}:{folder}", device="cpu") for name, folder in tiny.items()}


@pytest.mark.parametrize("size", SOURCE_SIZES, ids=[f"{w}x{h}" for w, h in SOURCE_SIZES])
@pytest.mark.parametrize("name", FAMILIES)
def test_pixels_equal_open_clips_own_transform_of_the_full_size_frames(name, size, tiny, indexers, textured_clips):
    indexer, clip = indexers[name], textured_clips[size]
    _, units = VideoDecoder().sample(clip.path, indexer.frame_spec)
    frames = units[0][1]
    ours = indexer.transform(frames.pixels)
    # the reference: create_model_and_transforms' preprocess on each full-size frame as a PIL image
    _, _, preprocess = open_clip.create_model_and_transforms(f"local-dir:{tiny[name]}")
    theirs = torch.stack([preprocess(Image.fromarray(clip.frames[i])) for i in frames.indices])
    side = indexer.transform.crop
    assert ours.shape == theirs.shape == (len(frames.indices), 3, side, side)
    assert float((ours - theirs).abs().max()) <= 1e-6
    # textured: the other filter, or the short side and a centre crop, would be far off
    other = {"bilinear": "bicubic", "bicubic": "bilinear"}[FILTERS[name]]
    for wrong in (FixedResize(side, side, other), ShortSideResize(side, side, FILTERS[name])):
        pixels = np.stack([wrong.apply(clip.frames[i]) for i in frames.indices])
        assert float((indexer.transform(pixels) - theirs).abs().max()) > 0.1


@pytest.mark.parametrize("name", FAMILIES)
def test_the_weights_config_decides_filter_resize_and_normalisation(name, indexers):
    indexer = indexers[name]
    side = indexer.transform.crop
    assert indexer.frame_spec.resize == FixedResize(side, side, FILTERS[name])  # squash: no crop
    assert indexer.transform.mean == indexer.transform.std == (0.5, 0.5, 0.5) and indexer.transform.sized
    # frames handed in at another size are squashed by torch, with the same filter: close, not equal
    frames = np.random.default_rng(0).integers(0, 256, (2, 90, 160, 3), np.uint8)
    resized = np.stack([indexer.frame_spec.resize.apply(f) for f in frames])
    assert float((indexer.transform(frames) - indexer.transform(resized)).abs().mean()) < 0.1


@pytest.mark.parametrize("name", FAMILIES)
def test_the_tiny_checkpoint_loads_by_family_and_embeds_frames_and_text(name, tiny, indexers):
    indexer = indexers[name]
    assert (indexer.name, indexer.dim) == (name, 16) and INDEXERS.resolve(f"{name}:{tiny[name]}").entry.name == name
    frames = np.random.default_rng(1).integers(0, 256, (3, 64, 80, 3), np.uint8)
    image, text = indexer.embed_units([frames]), indexer.embed_texts(TEXTS)
    assert image.shape == (1, 16) and text.shape == (len(TEXTS), 16)
    # independently: open_clip's own model, tokenizer and encode_text
    model = open_clip.create_model(f"local-dir:{tiny[name]}", pretrained=str(tiny[name] /
                                   "open_clip_model.safetensors")).eval()
    with torch.no_grad():
        want = model.encode_text(open_clip.get_tokenizer(f"local-dir:{tiny[name]}")(TEXTS)).numpy()
    assert np.allclose(text, want / np.linalg.norm(want, axis=1, keepdims=True), atol=1e-5)


def test_siglip2s_cleaning_and_padding_go_into_the_exported_tokenizer(indexers):
    tokenizer = indexers["siglip2"].tokenizer
    assert isinstance(tokenizer, open_clip.tokenizer.HFTokenizer) and tokenizer.context_length == 64
    texts = [*TEXTS, *PROBES, "it's!! a café... 🙂 x", "A_B-C (d) [e] {f} \\ back\u00a0nbsp"]
    ids = np.array([e.ids for e in open_clip_tokenizer(tokenizer).encode_batch(texts)])
    assert np.array_equal(ids, tokenizer(texts).numpy())


@pytest.mark.parametrize("name", FAMILIES)
def test_the_exported_text_tower_answers_as_embed_texts(name, indexers, tmp_path):
    tower, manifest = export(indexers[name], tmp_path / "towers")
    assert manifest.usable and manifest.inputs == ("input_ids",)
    assert float(np.abs(tower.embed_texts(TEXTS) - indexers[name].embed_texts(TEXTS)).max()) < 1e-5


@pytest.mark.slow
def test_index_then_search_with_the_tiny_pe(tiny, example_videos, tmp_path):
    folder = tmp_path / "clips"
    folder.mkdir()
    for clip in ("cup.mp4", "box.mp4", "bikes.mp4"):
        shutil.copy(example_videos / clip, folder / clip)
    index_dir = tmp_path / "index"
    runner = CliRunner()
    indexed = runner.invoke(app, ["index", str(folder), "-i", f"pe:{tiny['pe']}", "--index-dir", str(index_dir)])
    assert indexed.exit_code == 0, indexed.output
    found = runner.invoke(app, ["search", "a hand holding a cup", "--index-dir", str(index_dir), "-k", "3",
                                "--json"])
    assert found.exit_code == 0, found.output
    result = json.loads(found.stdout)
    assert sorted(h["path"] for h in result["hits"]) == ["bikes.mp4", "box.mp4", "cup.mp4"]
    assert result["signals"] == {"pe": f"pe:{tiny['pe']}"}  # the sentence went through pe's text tower


@pytest.mark.parametrize("name", FAMILIES)
def test_the_card_names_license_evidence_and_not_the_paper(name):
    from retrieval.cli.present.models import model_rows

    [row] = [r for r in model_rows("paper") if r["name"] == name]
    assert row["license"] == "Apache-2.0" and "not in ConViS-Bench Table 3" in row["evidence"]
    assert row["note"].startswith("not in the paper") and "squash" in row["size"]
    assert INDEXERS.entry(name).text_tower and INDEXERS.resolve(INDEXERS.entry(name).default_source).entry.name == name
    assert "R@1 50.3" in INDEXERS.entry("pe").evidence  # the published figure, where one is confirmed


def test_a_resize_mode_convis_cannot_follow_is_refused():
    from indexers.vision import ImageTransform

    with pytest.raises(ValueError, match="resize_mode"):
        ImageTransform(resize_mode="longest")
