"""LMMs that rate how similar two videos are in terms of a concept (ConViS-Bench protocol)."""

from rerankers.base import (
    MODES,
    RERANKERS,
    PairScore,
    Reranker,
    RerankerError,
    RerankerUnavailable,
    UnknownModelError,
    average_scores,
    expected_score,
)
from rerankers.factory import available_rerankers, create_reranker
from rerankers.prompts.similarity import PROMPT_VERSION, parse_score, system_prompt

__all__ = [
    "MODES",
    "PROMPT_VERSION",
    "RERANKERS",
    "PairScore",
    "Reranker",
    "RerankerError",
    "RerankerUnavailable",
    "UnknownModelError",
    "available_rerankers",
    "average_scores",
    "create_reranker",
    "expected_score",
    "parse_score",
    "system_prompt",
]
