"""open_clip tags must build the activation their weights were trained with (QuickGELU vs GELU)."""

import warnings

import open_clip
import pytest
import torch

from indexers import clip as clip_indexer
from indexers import create_indexer
from indexers.base import INDEXERS
from indexers.clip import open_clip_build_args


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
