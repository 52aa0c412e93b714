"""Querying: signals per concept, recall and ranking, LMM reranking, fusion at query time."""
