"""Where a model's weights would come from right now, decided without downloading anything."""

from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path

BUNDLED = "bundled"  # installed with a Python package: works offline
LOCAL = "local folder"
CACHED = "cached"  # in the Hugging Face cache: works offline
DOWNLOAD = "download on first use"
MISSING = "missing (offline)"  # HF_HUB_OFFLINE is set and nothing is cached


def hub_offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").lower() in {"1", "true", "yes", "on"}


def hub_cached(repo_id: str, filename: str = "config.json") -> bool:
    try:
        from huggingface_hub import try_to_load_from_cache

        return isinstance(try_to_load_from_cache(repo_id, filename), str)
    except Exception:  # an unreadable cache or an id the hub would refuse: the same as not cached
        return False


def hub_weights(source: str) -> str:
    """For a hub id or local folder: LOCAL, CACHED, DOWNLOAD or MISSING."""
    if Path(source).expanduser().is_dir():
        return LOCAL
    if hub_cached(source):
        return CACHED
    return MISSING if hub_offline() else DOWNLOAD


@contextmanager
def quiet_loading():
    """transformers draws a "Loading weights" bar on stderr while a model loads: noise between a command's lines
    (and its own progress bar)."""
    from transformers.utils import logging as hf_logging  # deferred: only a model load needs it

    was_on = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if was_on:
            hf_logging.enable_progress_bar()
