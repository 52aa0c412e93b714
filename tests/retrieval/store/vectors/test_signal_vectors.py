"""CLIPScore's composed vectors: one inner product is exactly the reference's CLIPScore."""

import numpy as np
import pytest

from retrieval.core.scores import clipscore, unit_similarity
from retrieval.store.vectors.signals import query_side, stored_side


def _unit(rng, n, d):
    x = rng.normal(size=(n, d)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def test_the_anchors_query_vector_dotted_with_a_candidates_stored_vector_is_the_clipscore():
    rng = np.random.default_rng(1)
    video, text = _unit(rng, 5, 8), _unit(rng, 5, 8)
    stored, query = stored_side(video, text), query_side(video, text)
    assert np.allclose(np.linalg.norm(stored, axis=1), 1, atol=1e-6)  # FAISS inner product = cosine
    for a in range(5):
        for b in range(5):
            want = clipscore(video[a], text[a], video[b], text[b])
            assert float(unit_similarity(query[a] @ stored[b])) == pytest.approx(want, abs=1e-6)


def test_the_composed_vector_is_not_the_plain_video_similarity():
    rng = np.random.default_rng(2)
    video, text = _unit(rng, 2, 8), _unit(rng, 2, 8)
    composed = float(unit_similarity(query_side(video, text)[0] @ stored_side(video, text)[1]))
    assert composed != pytest.approx(float(unit_similarity(video[0] @ video[1])), abs=1e-3)
