"""MiniLM loaded once and each distinct caption embedded once per test run, for the caption tests: the release-file
tests and the `bench captions` commands score the same captions, and each would load the model and embed them
again. What the code does with the vectors is unchanged; only repeated work is skipped."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

import numpy as np
import pytest
import sentence_transformers

from indexers.text import TextIndexer

_MODELS: dict[tuple, sentence_transformers.SentenceTransformer] = {}
_VECTORS: dict[tuple[str, str], np.ndarray] = {}


@contextmanager
def each_caption_embedded_once() -> Iterator[None]:
    load, embed = sentence_transformers.SentenceTransformer, TextIndexer.embed_texts

    def loaded_once(path, device=None):
        if (path, device) not in _MODELS:
            _MODELS[path, device] = load(path, device=device)
        return _MODELS[path, device]

    def embedded_once(self, texts):
        new = list(dict.fromkeys(t for t in texts if (self.source, t) not in _VECTORS))
        if new:
            _VECTORS.update(((self.source, t), v) for t, v in zip(new, embed(self, new), strict=True))
        return np.stack([_VECTORS[self.source, t] for t in texts]) if len(texts) else embed(self, texts)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sentence_transformers, "SentenceTransformer", loaded_once)
        patch.setattr(TextIndexer, "embed_texts", embedded_once)
        yield
