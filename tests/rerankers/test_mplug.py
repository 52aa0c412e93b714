"""mPLUG-Owl3 (paper Table 2) is a named family that convis refuses in one line: its remote code cannot load on
the installed transformers. Every way of naming it gets the same line, before any weights are looked for, and it
never counts as a signal convis computes."""

from __future__ import annotations

import importlib.util
import json
from importlib import metadata

import pytest

from bench.fusion import query_time_signals
from rerankers.base import RERANKERS, RerankerUnavailable
from rerankers.factory import available_rerankers, create_reranker, runnable_rerankers

CHECKPOINT = "mPLUG/mPLUG-Owl3-7B-240728"  # the reference's (models/mplugowl3_model.py)


def mplug_folder(tmp_path):
    """A weights folder as the hub checkpoint lays it out: a remote-code config (no weights needed to refuse)."""
    folder = tmp_path / "owl3"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({
        "model_type": "mplugowl3", "architectures": ["mPLUGOwl3Model"],
        "auto_map": {"AutoConfig": "configuration_mplugowl3.mPLUGOwl3Config",
                     "AutoModel": "modeling_mplugowl3.mPLUGOwl3Model"}}))
    return folder


def refused(spec: str) -> str:
    with pytest.raises(RerankerUnavailable) as err:
        create_reranker(spec, device="cpu", trust_remote_code=True)
    assert err.value.exit_code == 1
    line = err.value.public()
    assert "\n" not in line
    return line


def test_every_spec_of_mplug_owl3_is_the_same_one_line_refusal(tmp_path, empty_cache, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # missing weights would be another line: the refusal comes first
    folder = mplug_folder(tmp_path)
    specs = {"mplug-owl3": CHECKPOINT, "mplug-owl3-7b": CHECKPOINT, CHECKPOINT: CHECKPOINT,
             str(folder): str(folder), f"mplug-owl3:{folder}": str(folder)}
    for spec, source in specs.items():
        line = refused(spec)
        assert line.startswith(f"mplug-owl3: the remote code of {source!r} needs transformers < 4.50"), line
        assert f"this is transformers {metadata.version('transformers')}" in line
        assert "convis bench correlation" in line and "HF_HUB_OFFLINE" not in line


def test_the_installed_transformers_lacks_what_the_remote_code_needs():
    """The refusal's reason, checked against the installed library: what the 240728 remote code imports at its
    top (modeling_mplugowl3.py, modeling_hyper_qwen2.py) and calls when it decodes is not there."""
    from transformers import Qwen2PreTrainedModel
    from transformers.cache_utils import DynamicCache
    from transformers.models.siglip import modeling_siglip

    assert not hasattr(modeling_siglip, "SiglipVisionTransformer")
    assert importlib.util.find_spec("transformers.modeling_attn_mask_utils") is None
    assert not hasattr(DynamicCache, "from_legacy_cache") and not hasattr(DynamicCache, "get_usable_length")
    assert not hasattr(Qwen2PreTrainedModel, "generate")  # its language model generates through this base


def test_mplug_owl3_is_listed_but_never_run_or_fused():
    assert "mplug-owl3" in available_rerankers() and "mplug-owl3" not in runnable_rerankers()
    assert set(runnable_rerankers()) == set(available_rerankers()) - {"mplug-owl3"}
    assert RERANKERS.resolve(CHECKPOINT).entry.name == "mplug-owl3"
    assert "reranker:mplug-owl3" not in query_time_signals()
    assert "reranker:llava-onevision" in query_time_signals()
    entry = RERANKERS.entry("mplug-owl3")
    assert entry.weights_for(None) == "unsupported (needs transformers < 4.50)"
