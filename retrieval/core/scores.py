"""Similarity on the scale the paper reports global signals on."""

from __future__ import annotations

import numpy as np


def unit_similarity(cosine) -> np.ndarray:
    """Cosine similarity in [-1, 1] mapped to [0, 1] as the released score files are: (cos + 1) / 2."""
    return (np.asarray(cosine, dtype=np.float64) + 1.0) / 2.0
