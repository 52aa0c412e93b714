"""convis retrieval engine: decode -> embed -> store -> recall -> rerank -> rank.

The public face is :mod:`retrieval.api` (``from retrieval.api import Engine, QueryRequest``).
This package's ``__init__`` imports nothing: the model packages (``indexers``, ``rerankers``) use the
leaf building blocks in ``retrieval.core`` without loading the engine above them.
"""
