"""open_clip tags must build the activation their weights were trained with (QuickGELU vs GELU); both CLIP
families embed text with their own text tower."""

import json
import shutil
import string
import warnings
from pathlib import Path

import numpy as np
import open_clip
import pytest
import torch

from bench.tiny import vision as tm
from bench.tiny.vision import OPEN_CLIP_CFG
from indexers import clip as clip_indexer
from indexers import create_indexer
from indexers.base import INDEXERS
from indexers.clip import open_clip_build_args
from indexers.errors import ModelUnavailableError


def _table_says_quick_gelu(arch: str, tag: str) -> bool:
    return bool(open_clip.get_pretrained_cfg(arch, tag).get("quick_gelu", False)) or arch.endswith("-quickgelu")


def test_every_pretrained_tag_gets_the_activation_of_its_weights():
    pairs = open_clip.list_pretrained()
    assert len(pairs) > 100 and ("ViT-L-14", "openai") in pairs
    wrong = [(arch, tag) for arch, tag in pairs
             if open_clip_build_args(f"{arch}/{tag}") != (arch, tag, _table_says_quick_gelu(arch, tag))]
    assert wrong == []
    # the table does mark some: otherwise the check above proves nothing
    assert sum(_table_says_quick_gelu(a, t) for a, t in pairs) > 20


def test_no_quick_gelu_tag_ends_up_with_a_gelu_model():
    # what open_clip finally builds: the arch config's own flag, or the forced one
    for arch, tag in open_clip.list_pretrained():
        if open_clip.get_pretrained_cfg(arch, tag).get("quick_gelu", False):
            _, _, force = open_clip_build_args(f"{arch}/{tag}")
            assert force or open_clip.get_model_config(arch).get("quick_gelu", False), (arch, tag)


def test_default_clip_source_is_quick_gelu():
    source = INDEXERS.entry("clip").default_source
    assert source == "ViT-L-14/openai"
    assert open_clip_build_args(source) == ("ViT-L-14", "openai", True)


@pytest.mark.parametrize("source, expected", [
    ("ViT-B-32/laion2b_s34b_b79k", ("ViT-B-32", "laion2b_s34b_b79k", False)),
    ("ViT-B-32-quickgelu/openai", ("ViT-B-32-quickgelu", "openai", True)),
    ("ViT-B-32", ("ViT-B-32", None, False)),
    ("hf-hub:org/repo", ("hf-hub:org/repo", None, False)),  # the repo's config decides
    ("local-dir:/nowhere", ("local-dir:/nowhere", None, False)),
])
def test_other_sources_are_left_alone(source, expected):
    assert open_clip_build_args(source) == expected


def _activations(module: torch.nn.Module) -> set[type]:
    return {type(m) for m in module.modules() if isinstance(m, (torch.nn.GELU, open_clip.transformer.QuickGELU))}


@pytest.fixture
def no_download(monkeypatch):
    """The real tag path of open_clip's factory, minus fetching and loading the weights file."""
    monkeypatch.setattr(open_clip.factory, "download_pretrained", lambda cfg, cache_dir=None: "/no/such/weights.pt")
    monkeypatch.setattr(open_clip.factory, "load_checkpoint", lambda *a, **k: None)


def _build(spec: str):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ix = create_indexer(spec, device="cpu")
    return ix, [str(w.message) for w in caught if "QuickGELU mismatch" in str(w.message)]


def test_openai_tag_builds_quick_gelu_visual_tower(no_download):
    ix, mismatch = _build("clip:ViT-B-32/openai")
    assert _activations(ix.model.visual) == {open_clip.transformer.QuickGELU}
    assert mismatch == []


def test_without_the_fix_the_same_build_is_gelu(no_download, monkeypatch):
    # what the indexer did before: never force QuickGELU; the checks above would catch it
    monkeypatch.setattr(clip_indexer, "open_clip_build_args", lambda s: (*s.split("/"), False))
    ix, mismatch = _build("clip:ViT-B-32/openai")
    assert _activations(ix.model.visual) == {torch.nn.GELU}
    assert mismatch


# -- the text tower ------------------------------------------------------------------------------
TEXTS = ["a hand holding a cup", "two people kayaking on a lake " * 20]  # the second is longer than any context


def _unit_rows(x: torch.Tensor) -> np.ndarray:
    x = x.float().numpy()
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def _hf_clip_with_tokenizer(source: Path, folder: Path) -> Path:
    """The tiny HF CLIP with a CLIP BPE tokenizer small enough for its 100-token vocabulary (letters only)."""
    shutil.copytree(source, folder)
    letters = string.ascii_lowercase
    tokens = [*letters, *(c + "</w>" for c in letters), "<|startoftext|>", "<|endoftext|>"]
    (folder / "vocab.json").write_text(json.dumps({t: i for i, t in enumerate(tokens)}))
    (folder / "merges.txt").write_text("#version: 0.2\n")
    return folder


def test_hf_clip_embeds_text_with_get_text_features_of_truncated_tokens(tiny_models, tmp_path):
    from transformers import CLIPModel, CLIPTokenizer

    folder = _hf_clip_with_tokenizer(tiny_models["hf_clip"], tmp_path / "clip")
    ix = create_indexer(str(folder), device="cpu")
    got = ix.embed_texts(TEXTS)
    image = ix.embed_units([np.zeros((2, 32, 32, 3), np.uint8)])
    assert got.shape == (2, image.shape[1]) and np.allclose(np.linalg.norm(got, axis=1), 1, atol=1e-5)
    # independently: the checkpoint's own tokenizer and get_text_features, 77 tokens or its positions if fewer
    model = CLIPModel.from_pretrained(folder).eval()
    positions = model.config.text_config.max_position_embeddings
    assert positions < 77
    tokens = CLIPTokenizer.from_pretrained(folder)(TEXTS, padding=True, truncation=True, max_length=positions,
                                                   return_tensors="pt")
    assert tokens["input_ids"].shape[1] == positions  # the long text was cut, not refused
    with torch.no_grad():
        out = model.get_text_features(input_ids=tokens["input_ids"], attention_mask=tokens["attention_mask"])
    out = out if isinstance(out, torch.Tensor) else out.pooler_output
    assert np.allclose(got, _unit_rows(out), atol=1e-5)
    assert ix.embed_texts([]).shape == (0, image.shape[1])


def test_hf_clip_without_a_tokenizer_says_it_cannot_embed_text(tiny_models):
    ix = create_indexer(str(tiny_models["hf_clip"]), device="cpu")
    with pytest.raises(ModelUnavailableError, match="cannot load clip weights"):
        ix.embed_texts(TEXTS[:1])


def _open_clip_with_vocabulary(folder: Path, vocab: int) -> Path:
    """The tiny open_clip config with ``vocab`` tokens in its text tower (open_clip's tokenizer uses 49408)."""
    return tm.tiny_open_clip(folder, vocab=vocab)


def test_open_clip_embeds_text_with_encode_text_of_its_tokens(tmp_path):
    folder = _open_clip_with_vocabulary(tmp_path / "open-clip", 49408)
    ix = create_indexer(str(folder), device="cpu")
    got = ix.embed_texts(TEXTS)
    image = ix.embed_units([np.zeros((2, 32, 32, 3), np.uint8)])
    assert got.shape == (2, image.shape[1]) and np.allclose(np.linalg.norm(got, axis=1), 1, atol=1e-5)
    # independently: open_clip's module-level tokenizer at the model's context length, and encode_text
    model = open_clip.create_model(f"local-dir:{folder}", pretrained=str(folder / "open_clip_model.safetensors"))
    tokens = open_clip.tokenize(TEXTS, context_length=OPEN_CLIP_CFG["text_cfg"]["context_length"])
    with torch.no_grad():
        want = _unit_rows(model.eval().encode_text(tokens))
    assert np.allclose(got, want, atol=1e-5)
    assert not np.allclose(got[0], got[1], atol=1e-3)  # different texts, different vectors


def test_open_clip_whose_text_tower_is_smaller_than_its_tokenizer_is_refused_in_one_line(tiny_models):
    ix = create_indexer(str(tiny_models["open_clip"]), device="cpu")
    with pytest.raises(ModelUnavailableError, match="cannot embed text") as refused:
        ix.embed_texts(TEXTS[:1])
    assert "\n" not in str(refused.value)
