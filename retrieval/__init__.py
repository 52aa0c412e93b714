"""convis retrieval engine: decode -> embed -> store -> recall -> rerank -> rank.

The public entry point is :class:`retrieval.engine.Engine`; it is imported lazily so
that the model packages (``indexers``, ``rerankers``) can use the small building
blocks here (registry, concepts, frame sampling) without an import cycle.
"""

from __future__ import annotations

__all__ = ["Engine"]


def __getattr__(name: str):
    if name == "Engine":
        from retrieval.engine import Engine

        return Engine
    raise AttributeError(name)
