"""Synthetic rated pairs whose human score is a known linear function of the signals."""

from __future__ import annotations

import numpy as np

from bench.fusion_train import PairTable

TRUTH = {"s1": 0.5, "s2": 0.3, "s3": 0.1, "s4": 0.0}


def linear_table(n: int = 500, seed: int = 0, noise: float = 0.2) -> PairTable:
    """Independent N(0, 1) signals; human score = 3 + sum(TRUTH[j] * s_j) + noise."""
    rng = np.random.default_rng(seed)
    cols = {name: rng.standard_normal(n) for name in TRUTH}
    y = 3 + sum(w * cols[name] for name, w in TRUTH.items()) + noise * rng.standard_normal(n)
    pairs = [(f"v{i}a.mp4", f"v{i}b.mp4") for i in range(n)]
    return PairTable(pairs, {"location": y}, {"location": cols})
