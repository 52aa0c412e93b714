"""What every indexer is: frames (or captions) in, one L2-normalised vector per unit out."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import ClassVar, Sequence

import numpy as np

from retrieval.registry import Registry


class Indexer(ABC):
    """An embedding model.

    ``kind`` says what it consumes:
      * ``"image"``: each sampled frame is embedded, then mean-pooled per unit (paper protocol);
      * ``"video"``: the unit's frames are embedded together as one clip;
      * ``"text"``: the unit's caption is embedded.
    """

    kind: ClassVar[str] = "image"
    name: str  # registry name, e.g. "dinov2"
    source: str  # hub id, open_clip tag or local path the weights came from
    dim: int
    frames_per_unit: int = 8  # how many frames a unit is sampled to before embedding

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


def l2_normalise(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float32)
    norms = np.linalg.norm(x, axis=-1, keepdims=True)
    return x / np.maximum(norms, 1e-12)


INDEXERS: Registry[Indexer] = Registry("indexer")


def create_indexer(spec: str, **kwargs) -> Indexer:
    """Build an indexer from a name (``dinov2``), ``name:source``, a hub id or a local folder."""
    _load_builtin()
    return INDEXERS.create(spec, **kwargs)


def available_indexers() -> list[str]:
    _load_builtin()
    return INDEXERS.names()


def _load_builtin() -> None:
    # importing the family modules registers them; done lazily so `import indexers` stays cheap
    import indexers.families  # noqa: F401
