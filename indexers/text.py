"""The `text` indexer: captions -> sentence-transformers embeddings (SBERT baseline of ConViS-Bench)."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np

from indexers.base import Indexer, l2_normalise
from indexers.bundled import MINILM, weights_path
from indexers.errors import unavailable
from retrieval.core.concepts import CONVIS_CONCEPTS
from retrieval.core.scores import unit_similarity
from retrieval.core.user_files import read_text
from retrieval.core.weights import quiet_loading


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

    def text_graph(self):
        """The whole sentence-transformers model (its own pooling and normalisation) from token ids, with its
        tokenizer truncating at its ``max_seq_length`` and padding as its ``encode`` does."""
        from indexers.text_export import Features, TextGraph, tokenizer_of

        tokenizer = tokenizer_of(self._model.tokenizer, self._model.max_seq_length)
        if tokenizer is None:
            return None
        return TextGraph(Features(self._model, _sentence_embedding), tokenizer)


def _sentence_embedding(model, input_ids, attention_mask):
    return model({"input_ids": input_ids, "attention_mask": attention_mask})["sentence_embedding"]


def build_text(source: str | None, device: str | None = None, protocol: str = "fast", **kwargs) -> TextIndexer:
    return TextIndexer(source or MINILM, device=device, **kwargs)


def read_captions(folder: str | Path) -> dict[str, str]:
    """`<video stem>.txt` files -> {stem: caption}, whitespace stripped as the reference does. Descriptions of
    one concept beside them (`<stem>.location.txt`, any ConViS concept) are not captions and are left out."""
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"caption folder not found: {folder}")
    return {f.stem: read_text(f, "caption").strip() for f in sorted(folder.glob("*.txt"))
            if Path(f.stem).suffix[1:] not in CONVIS_CONCEPTS}


def pair_similarity(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """(cos + 1) / 2 of row-aligned unit vectors: the pair score in [0, 1] the release uses."""
    return unit_similarity(np.sum(np.asarray(a, dtype=np.float64) * np.asarray(b, dtype=np.float64), axis=-1))
