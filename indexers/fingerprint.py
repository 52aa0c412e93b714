"""A copy fingerprint of each unit, from its pixels alone (no weights): what ``convis dupes`` groups best.

Semantic embeddings are built to see the same kind of scene as the same: a fixed camera's consecutive takes of
one square score closer (EfficientNet-Lite0: 0.97) than a 10%-cropped re-encode of one take does (0.93), so no
threshold on them tells copies from footage of the same place.  This vector is made to change with what
happens in a unit and to stay put under re-encoding, rescaling, cropping and small overlays:

- *where things move*: the mean absolute grey-level change between consecutive sampled frames (2 a second) in
  each cell of an 8x8 grid over the central 80% of the frame (a crop of up to 10% a side keeps that region), as
  ranks (an ordinal signature: a lower bitrate or a logo changes a few cells' values, hardly their order),
  centred and unit length;
- *what it looks like*: the unit's mean grey level in the same cells, as ranks, centred and unit length.

The vector is ``[sqrt(0.1) * look, sqrt(0.9) * motion]``, so a dot product is ``0.1 * look + 0.9 * motion``:
in the example clips two takes of the square agree in their look (0.98) and differ in where people walk (0.2 to
0.7), while a copy agrees in both.  A unit with (almost) no motion takes its look for both halves.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from indexers.base import Indexer, l2_normalise
from retrieval.core.sampling import RATE, FrameSpec

GRID = 8  # cells a side
MARGIN = 0.1  # of each side left out: a crop of up to 10% keeps the rest
RATE_FPS = 2.0  # sampled frames a second
MOST_FRAMES = 240  # a unit's frames at most (2 minutes at 2 a second; a longer unit is sampled more sparsely)
LOOK, MOTION = 0.1, 0.9  # each half's share of the dot product
STILL = 0.5  # mean grey-level change a frame below which a unit has no motion worth reading
DIM = 2 * GRID * GRID
POOLING = ("8x8 grid over the central 80%: ranks of mean grey level and of mean frame-to-frame change, "
           f"{LOOK:g} / {MOTION:g} of the dot product")


class FingerprintIndexer(Indexer):
    name = "fingerprint"
    pooling = POOLING

    def __init__(self, source: str = "pixels", protocol: str = "fast"):
        self.source, self.dim, self.protocol = source, DIM, protocol
        self.frame_spec = FrameSpec(rule=RATE, count=MOST_FRAMES, rate=RATE_FPS)

    def embed_units(self, units: Sequence[np.ndarray]) -> np.ndarray:
        if not len(units):
            return np.zeros((0, DIM), np.float32)
        return l2_normalise(np.stack([fingerprint(frames) for frames in units]))


def fingerprint(frames: np.ndarray) -> np.ndarray:
    """The vector of one unit's frames ((T, H, W, 3) uint8 RGB)."""
    cells = np.stack([_cells(_grey(frame)) for frame in frames])
    look = _ordinal(cells.mean(axis=0))
    change = np.abs(np.diff(cells, axis=0)).mean(axis=0) if len(cells) > 1 else np.zeros(GRID * GRID)
    motion = _ordinal(change) if change.mean() >= STILL else look
    return np.concatenate([np.sqrt(LOOK) * look, np.sqrt(MOTION) * motion]).astype(np.float32)


def _grey(frame: np.ndarray) -> np.ndarray:
    return frame[..., :3].astype(np.float32) @ np.array([0.299, 0.587, 0.114], np.float32)


def _cells(grey: np.ndarray) -> np.ndarray:
    """Mean of each cell of a GRID x GRID grid over the frame's central region (a summed-area table)."""
    h, w = grey.shape
    top, left = int(h * MARGIN), int(w * MARGIN)
    inner = grey[top:max(h - top, top + 1), left:max(w - left, left + 1)]
    table = np.pad(inner.cumsum(0, dtype=np.float64).cumsum(1), ((1, 0), (1, 0)))
    ys = np.linspace(0, inner.shape[0], GRID + 1).astype(int)
    xs = np.linspace(0, inner.shape[1], GRID + 1).astype(int)
    ys[1:] = np.maximum(ys[1:], ys[:-1] + 1).clip(max=inner.shape[0])  # a frame smaller than the grid
    xs[1:] = np.maximum(xs[1:], xs[:-1] + 1).clip(max=inner.shape[1])
    sums = table[ys[1:]][:, xs[1:]] - table[ys[:-1]][:, xs[1:]] - table[ys[1:]][:, xs[:-1]] + table[ys[:-1]][:, xs[:-1]]
    area = np.maximum(np.outer(np.diff(ys), np.diff(xs)), 1)
    return (sums / area).ravel()


def _ordinal(values: np.ndarray) -> np.ndarray:
    """Ranks of ``values`` (ties averaged), centred, unit length; zeros when every value ties."""
    _, inverse, counts = np.unique(values, return_inverse=True, return_counts=True)
    ranks = (np.cumsum(counts) - counts + (counts - 1) / 2)[inverse.ravel()]
    ranks -= ranks.mean()
    norm = np.linalg.norm(ranks)
    return ranks / norm if norm > 0 else ranks


def build_fingerprint(source: str = "pixels", device: str | None = None, protocol: str = "fast",
                      **_) -> FingerprintIndexer:
    return FingerprintIndexer(source or "pixels", protocol)
