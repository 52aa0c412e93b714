"""Querying: signals per concept, recall and ranking, pair signals, fusion at query time, ranking by difference."""
