"""One factory for every reranker: a spec (name, ``name:weights``, hub id or folder) in, a built model out.

The registry lives in ``rerankers.base`` and the families register into it; this module imports the
families, so nothing below it imports back (timm's layout).
"""

from __future__ import annotations

from pathlib import Path

# importing the family modules registers them (they import transformers only when a model is built)
from rerankers import internvl, llava, mplug, qwen  # noqa: F401
from rerankers.base import RERANKERS, Reranker, RerankerUnavailable
from rerankers.hf import cpu_hint, looks_like_path, unavailable
from retrieval.core.weights import hub_missing

# families listed by name whose checkpoints convis cannot run: each answers every request with its one line
REFUSED = {mplug.NAME: mplug.refusal}


def create_reranker(spec: str, device: str | None = None, dtype=None, **kwargs) -> Reranker:
    """Build a reranker from a name (``qwen2.5-vl``), ``name:source``, a hub id or a local folder.

    Raises UnknownModelError for a spec no family claims and RerankerUnavailable when the
    weights are not on this machine; both carry a one-line message.
    """
    check_weights(spec)
    return RERANKERS.create(spec, device=device, dtype=dtype, **kwargs)


def check_weights(spec: str) -> None:
    """Refuse ``spec`` in one line (RerankerUnavailable) when its family cannot run here (``REFUSED``) or its
    weights cannot be had now: a folder that is not there, or hub weights neither cached nor downloadable
    (HF_HUB_OFFLINE is set, or the hub does not answer); a name no family claims is UnknownModelError, as
    building it would be.

    Loads nothing and imports neither torch nor transformers, so a command whose model is missing says so at once
    instead of after loading its libraries (or a stalled download's retries).  A present folder passes: whether
    it holds a checkpoint the family loads is the family's to say when it builds."""
    text = spec.strip()
    if Path(text).expanduser().is_dir():
        return
    if text.startswith(("/", "./", "../", "~")):
        # a bare path the registry cannot open would otherwise read as an "unknown reranker"
        raise RerankerUnavailable(f"no weights folder at {text!r}; check the path{cpu_hint(None)}")
    resolved = RERANKERS.resolve(text)
    source = resolved.source or resolved.entry.default_source
    if resolved.entry.name in REFUSED:  # before its weights: having them would not make it run
        raise REFUSED[resolved.entry.name](source)
    if source is None:
        return
    if looks_like_path(source):
        missing = None if Path(source).expanduser().is_dir() else "no such folder"
    else:
        missing = hub_missing(source)
    if missing:
        raise unavailable(resolved.entry.name, source, missing)


def available_rerankers() -> list[str]:
    """Every registered family, the refused ones included (``convis models`` lists them with why)."""
    return RERANKERS.names()


def runnable_rerankers() -> list[str]:
    """The families convis can run: every registered one but the refused."""
    return [name for name in RERANKERS.names() if name not in REFUSED]



def create_captioner(spec: str, device: str | None = None, dtype=None, **kwargs) -> Reranker:
    """A model that describes clips (``describe``): any reranker family, built from the same specs."""
    return create_reranker(spec, device=device, dtype=dtype, **kwargs)
