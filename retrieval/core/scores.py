"""Similarity on the scale the paper reports global signals on."""

from __future__ import annotations

import numpy as np


def unit_similarity(cosine) -> np.ndarray:
    """Cosine similarity in [-1, 1] mapped to [0, 1] as the released score files are: (cos + 1) / 2."""
    return (np.asarray(cosine, dtype=np.float64) + 1.0) / 2.0


def clipscore(video_1: np.ndarray, caption_1: np.ndarray, video_2: np.ndarray, caption_2: np.ndarray) -> float:
    """The reference's CLIPScore of a pair from unit vectors of one CLIP-family model: the mean of cos(video 1,
    caption 2) and cos(video 2, caption 1), then (s + 1) / 2."""
    cross = (float(np.dot(video_1, caption_2)) + float(np.dot(video_2, caption_1))) / 2
    return float(unit_similarity(cross))
