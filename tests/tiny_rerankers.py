"""Tiny random rerankers whose answers spread apart, and noise frames: what the sharing tests of the rerankers and
of the pair scorer score."""

from __future__ import annotations

import numpy as np
import torch

from rerankers.factory import create_reranker

TOLERANCE = 1e-5  # shared and unshared scores agree to this in fp32


def noise(n: int, height: int, width: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (n, height, width, 3), dtype=np.uint8)


def build(tiny_folders, family: str, **kwargs):
    reranker = create_reranker(str(tiny_folders[family]), device="cpu", frames_per_video=4, **kwargs)
    # a random tiny model answers near-uniformly and rarely with a digit: only the answers' rows of the head are
    # kept (scaled), so the expected scores spread apart and the greedy token is a digit
    with torch.no_grad():
        head = reranker.model.lm_head.weight
        kept = head[reranker.answer_ids] * 20
        head.zero_()
        head[reranker.answer_ids] = kept
    return reranker
