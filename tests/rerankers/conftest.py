"""Tiny random VLM checkpoints the reranker tests load, built once a session (each builds in about a second)."""

from __future__ import annotations

import pytest

from bench.tiny import vlm as tiny_vlm


@pytest.fixture(scope="session")
def tiny_folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("tiny-vlms")
    return {
        "qwen2_vl": tiny_vlm.build_qwen_vl(root / "tiny-qwen2", model_type="qwen2_vl"),
        "qwen2_5_vl": tiny_vlm.build_qwen_vl(root / "tiny-qwen25", model_type="qwen2_5_vl"),
        "llava": tiny_vlm.build_llava_onevision(root / "tiny-llava"),
        "internvl": tiny_vlm.build_internvl(root / "tiny-internvl"),
    }
