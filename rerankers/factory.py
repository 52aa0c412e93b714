"""One factory for every reranker: a spec (name, ``name:weights``, hub id or folder) in, a built model out.

The registry lives in ``rerankers.base`` and the families register into it; this module imports the
families, so nothing below it imports back (timm's layout).
"""

from __future__ import annotations

from pathlib import Path

# importing the family modules registers them (they import transformers only when a model is built)
from rerankers import internvl, llava, qwen  # noqa: F401
from rerankers.base import RERANKERS, Reranker, RerankerUnavailable


def create_reranker(spec: str, device: str | None = None, dtype=None, **kwargs) -> Reranker:
    """Build a reranker from a name (``qwen2.5-vl``), ``name:source``, a hub id or a local folder.

    Raises UnknownModelError for a spec no family claims and RerankerUnavailable when the
    weights are not on this machine; both carry a one-line message.
    """
    _check_local_spec(spec)
    return RERANKERS.create(spec, device=device, dtype=dtype, **kwargs)


def _check_local_spec(spec: str) -> None:
    # a bare path the registry cannot open would otherwise read as an "unknown reranker"
    text = spec.strip()
    if text.startswith(("/", "./", "../", "~")) and not Path(text).expanduser().is_dir():
        raise RerankerUnavailable(f"no weights folder at {text!r}")


def available_rerankers() -> list[str]:
    return RERANKERS.names()



def create_captioner(spec: str, device: str | None = None, dtype=None, **kwargs) -> Reranker:
    """A model that describes clips (``describe``): any reranker family, built from the same specs."""
    return create_reranker(spec, device=device, dtype=dtype, **kwargs)
