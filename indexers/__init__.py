"""Embedding models that turn sampled frames (or captions) into vectors for recall."""

from indexers.base import INDEXERS, Indexer, l2_normalise
from indexers.factory import available_indexers, create_indexer

__all__ = ["INDEXERS", "Indexer", "available_indexers", "create_indexer", "l2_normalise"]
