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
        import torch

        from indexers.text_export import TextGraph

        tokens = self._model.tokenizer
        if not getattr(tokens, "is_fast", False):
            return None  # a Python-only tokenizer: `tokenizers` cannot read it
        tokenizer = type(tokens.backend_tokenizer).from_str(tokens.backend_tokenizer.to_str())
        tokenizer.enable_truncation(self._model.max_seq_length)
        tokenizer.enable_padding(pad_id=tokens.pad_token_id, pad_token=tokens.pad_token)
        model = self._model

        class SentenceEmbedding(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.model = model

            def forward(self, input_ids, attention_mask):
                return self.model({"input_ids": input_ids, "attention_mask": attention_mask})["sentence_embedding"]

        return TextGraph(SentenceEmbedding(), tokenizer)


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
