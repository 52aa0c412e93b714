"""Asking a video LMM: the similarity rating of clip pairs (reranking), VQAScore, differences in words and
descriptions of units, beside what they share: clips decoded once per command and the persistent score cache.
What each task asks is in ``rerankers.prompts``."""
