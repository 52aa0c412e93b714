"""Where a model's weights would come from right now, decided without downloading anything."""

from __future__ import annotations

import os
import socket
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlparse

BUNDLED = "bundled"  # installed with a Python package: works offline
LOCAL = "local folder"
CACHED = "cached"  # in the Hugging Face cache: works offline
DOWNLOAD = "download on first use"
MISSING = "missing (hub offline: HF_HUB_OFFLINE is set)"  # and nothing is cached
UNREACHABLE = "missing (hub unreachable)"  # the hub does not answer and nothing is cached
HUB_TIMEOUT = 1.0  # seconds a probe of the hub waits: an unreachable hub must cost a moment, not a retry storm


def hub_offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").lower() in {"1", "true", "yes", "on"}


def hub_folder(repo_id: str) -> Path:
    """The Hugging Face cache's folder of ``repo_id`` (there or not), from the hub's constants alone: the
    client costs 0.1 s to import."""
    from huggingface_hub.constants import HF_HUB_CACHE

    return Path(HF_HUB_CACHE) / f"models--{repo_id.replace('/', '--')}"


def hub_cached(repo_id: str, filename: str = "config.json") -> bool:
    try:
        if not hub_folder(repo_id).is_dir():
            return False  # nothing of the model is cached: no need to ask the client
        from huggingface_hub import try_to_load_from_cache

        return isinstance(try_to_load_from_cache(repo_id, filename), str)
    except Exception:  # an unreadable cache or an id the hub would refuse: the same as not cached
        return False


def hub_weights(source: str) -> str:
    """For a hub id or local folder: LOCAL, CACHED, DOWNLOAD, or MISSING / UNREACHABLE when it could not be
    downloaded now (offline, or the hub does not answer: one probe serves a whole listing)."""
    if Path(source).expanduser().is_dir():
        return LOCAL
    if hub_cached(source):
        return CACHED
    if hub_offline():
        return MISSING
    return DOWNLOAD if hub_answers() else UNREACHABLE


_ANSWERS: dict[str, tuple[float, bool]] = {}  # hub host -> (when probed, whether it answered)
ANSWER_TTL = 30.0  # seconds a probe's answer stands for: a listing of many models probes once


def hub_answers() -> bool:
    """``hub_reachable()``, probed at most once per ``ANSWER_TTL`` seconds per hub host."""
    host, now = hub_host(), time.monotonic()
    probed = _ANSWERS.get(host)
    if probed is None or now - probed[0] > ANSWER_TTL:
        probed = _ANSWERS[host] = (now, hub_reachable())
    return probed[1]


def hub_host() -> str:
    """The model hub's host (and port, when it names one), as HF_ENDPOINT sets it."""
    from huggingface_hub import constants

    return urlparse(constants.ENDPOINT).netloc or constants.ENDPOINT


def hub_reachable(timeout: float = HUB_TIMEOUT) -> bool:
    """Whether the hub's host accepts a connection within ``timeout`` seconds.

    The probe runs in a thread that is waited for at most ``timeout``: the socket's timeout does not cover the
    name lookup, and a resolver that stalls would otherwise stall the command."""
    answered: list[bool] = []
    probe = threading.Thread(target=lambda: answered.append(_connects(timeout)), daemon=True)
    probe.start()
    probe.join(timeout)
    return bool(answered and answered[0])


def _connects(timeout: float) -> bool:
    from huggingface_hub import constants

    url = urlparse(constants.ENDPOINT)
    try:
        port = url.port or (80 if url.scheme == "http" else 443)
    except ValueError:  # a port that is not a number: no hub to reach
        return False
    if not url.hostname:
        return False
    try:
        with socket.create_connection((url.hostname, port), timeout=timeout):
            return True
    except OSError:  # refused, unroutable, no such name
        return False


def hub_missing(repo_id: str) -> str | None:
    """Why the hub weights ``repo_id`` cannot be had now, in words; None when they are cached or the hub answers.
    Costs a cache lookup, and at most one probe of ``HUB_TIMEOUT`` seconds."""
    if hub_cached(repo_id):
        return None
    if hub_offline():
        return "not in the Hugging Face cache and HF_HUB_OFFLINE is set"
    if not hub_reachable():
        return f"not in the Hugging Face cache and the model hub ({hub_host()}) is unreachable"
    return None


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
