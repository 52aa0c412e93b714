"""What every indexer is: frames (or captions) in, one L2-normalised vector per unit out."""

from __future__ import annotations

from abc import ABC
from typing import ClassVar, Iterable, Sequence

import numpy as np

from retrieval.core.registry import Registry
from retrieval.core.sampling import FrameSpec

# "fast": convis's defaults (about 1 frame a second, 8 a unit, decoder-scaled frames);
# "paper": the ConViS-Bench reference's frames, pixels, weights and precision, exactly
PROTOCOLS = ("fast", "paper")
FAST_DTYPE = "fp16 on GPU, fp32 on CPU"
PAPER_DTYPE = "fp32"


def model_card(frames: str, size: str, pooling: str, dtype: str) -> dict[str, str]:
    """What a model is fed and how its vector is made, for ``convis models`` (no weights needed)."""
    return {"frames": frames, "size": size, "pooling": pooling, "dtype": dtype}


class Indexer(ABC):
    """An embedding model.

    ``kind`` says what it consumes:
      * ``"image"``: each sampled frame is embedded, then mean-pooled per unit (paper protocol);
      * ``"video"``: the unit's frames are embedded together as one clip;
      * ``"text"``: the unit's caption is embedded.
    ``frame_spec`` says which frames of a unit it sees and at what size they are decoded.
    """

    kind: ClassVar[str] = "image"
    name: str  # registry name, e.g. "dinov2"
    source: str  # hub id, open_clip tag or local path the weights came from
    dim: int
    frame_spec: FrameSpec = FrameSpec()
    protocol: str = "fast"
    pooling: ClassVar[str] = ""  # how a unit's vector is made, in words (``convis models``)

    @property
    def frames_per_unit(self) -> int:
        """How many frames a unit is sampled to before embedding."""
        return self.frame_spec.count

    @frames_per_unit.setter
    def frames_per_unit(self, count: int) -> None:
        self.frame_spec = self.frame_spec.with_count(count)

    @property
    def model_id(self) -> str:
        """Stable identity of the weights, stored with every vector."""
        return f"{self.name}:{self.source}"

    def embed_units(self, units: Sequence[np.ndarray]) -> np.ndarray:
        """``units[i]`` is (T, H, W, 3) uint8 RGB; returns (len(units), dim) float32, rows unit-norm."""
        raise NotImplementedError(f"{self.name} does not embed frames")

    def embed_texts(self, texts: Sequence[str]) -> np.ndarray:
        """One caption per unit; returns (len(texts), dim) float32, rows unit-norm."""
        raise NotImplementedError(f"{self.name} does not embed text")


def takes_frame_count(indexer: Indexer) -> bool:
    """Whether a run's ``--frames`` applies to ``indexer``: image models that sample take it; models fed
    every frame keep every frame, and video models keep the clip length they were trained on."""
    return indexer.kind == "image" and indexer.frame_spec.rule != "every"


def apply_frames(indexers: Iterable[Indexer], frames: int | None) -> None:
    """Sample ``frames`` per unit with every indexer that takes a frame count (None: leave each its own)."""
    if not frames:
        return
    for indexer in indexers:
        if takes_frame_count(indexer):
            indexer.frames_per_unit = frames


def l2_normalise(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float32)
    norms = np.linalg.norm(x, axis=-1, keepdims=True)
    return x / np.maximum(norms, 1e-12)


INDEXERS: Registry[Indexer] = Registry("indexer")
