"""A retrieval split built from the pair ratings, for users without the (unreleased) human partial orders.

Anchors are videos rated against at least two distinct partners; their candidates are those partners;
relevance is the human mean rounded to the nearest 0.5 (halves up), so near-equal ratings become ties.
Output is the `ranked.json` format: rank 1 = most similar, dense ranks.
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Mapping

from bench.loaders import GtPair, PairKey
from bench.metrics import dense_ranks
from retrieval.core.concepts import BENCH_KEYS, CONVIS_CONCEPTS

MIN_CANDIDATES = 2  # with one candidate there is nothing to retrieve


def round_half(x: float) -> float:
    """Nearest multiple of 0.5, halves up (3.25 -> 3.5, 3.75 -> 4.0)."""
    # the epsilon keeps means like 3.2499999999 (summation error) from rounding down
    return math.floor(x * 2 + 0.5 + 1e-9) / 2


def partners(gt_pairs: Mapping[PairKey, GtPair]) -> dict[str, dict[str, list[dict[str, float]]]]:
    """video -> partner -> the ratings of every pair joining them (either order)."""
    out: dict[str, dict[str, list[dict[str, float]]]] = defaultdict(lambda: defaultdict(list))
    for (v1, v2), pair in gt_pairs.items():
        if v1 == v2:
            continue
        out[v1][v2].append(pair.scores)
        out[v2][v1].append(pair.scores)
    return out


def make_split(gt_pairs: Mapping[PairKey, GtPair]) -> list[dict]:
    """One `{"anchor": a, "<BenchKey>": {candidate: rank}}` entry per anchor, anchors sorted by name."""
    split = []
    for anchor, cands in sorted(partners(gt_pairs).items()):
        if len(cands) < MIN_CANDIDATES:
            continue
        entry: dict = {"anchor": anchor}
        for concept in CONVIS_CONCEPTS:
            ranks = _concept_ranks(cands, concept)
            if ranks:
                entry[BENCH_KEYS[concept]] = ranks
        if len(entry) > 1:
            split.append(entry)
    return split


def _concept_ranks(cands: Mapping[str, list[dict[str, float]]], concept: str) -> dict[str, int]:
    relevance = {}
    for cand, ratings in sorted(cands.items()):
        values = [r[concept] for r in ratings if concept in r]
        if values:
            # a pair rated in both orders counts once, as the mean of its two ratings
            relevance[cand] = round_half(sum(values) / len(values))
    return dense_ranks(relevance) if len(relevance) >= MIN_CANDIDATES else {}
