"""One factory for every indexer: a spec (name, ``name:weights``, hub id or folder) in, a built model out.

The registry lives in ``indexers.base``; ``indexers.families`` registers the built-in families into it by
name and the module that builds each, so resolving a spec imports no model code until one is built.
"""

from __future__ import annotations

import indexers.families  # noqa: F401  (registers the built-in families)
from indexers.base import INDEXERS, PROTOCOLS, Indexer
from retrieval.core.registry import UnknownModelError


def create_indexer(spec: str, protocol: str = "fast", **kwargs) -> Indexer:
    """Build an indexer from a name (``dinov2``), ``name:source``, a hub id or a local folder.

    ``protocol="paper"`` builds it as the ConViS-Bench reference ran it (its default weights,
    frames, pixels and precision); ``"fast"`` is convis's cheaper default.
    """
    if protocol not in PROTOCOLS:
        raise ValueError(f"unknown protocol {protocol!r}; use one of {', '.join(PROTOCOLS)}")
    return INDEXERS.create(spec, variant=protocol, protocol=protocol, **kwargs)


def has_text_tower(spec: str) -> bool:
    """Whether the family of ``spec`` (a name, model id, hub id or folder) embeds sentences, without building
    it: text search then builds only the models that can answer. False for a spec no family takes."""
    try:
        return INDEXERS.resolve(spec).entry.text_tower
    except UnknownModelError:
        return False


def available_indexers() -> list[str]:
    return INDEXERS.names()

