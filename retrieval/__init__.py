"""convis retrieval engine: decode -> embed -> store -> recall -> rerank -> rank.

The public entry point is :class:`retrieval.engine.Engine` (``from retrieval.engine import Engine``).
This package's ``__init__`` imports nothing: the model packages (``indexers``, ``rerankers``) use the
leaf building blocks in ``retrieval.core`` without loading the engine above them.
"""
