"""A filtered FAISS search loses nothing: for Flat, IVF and HNSW indices and filters keeping 1%, 10% and 50% of the
units, its top k are those of an exact search over the allowed rows (computed here with numpy), where filtering an
approximate search's results afterwards loses most of them."""

import numpy as np
import pytest

from retrieval.store.vectors import VectorIndex

N, DIM, K = 20_000, 32, 10


@pytest.fixture(scope="module")
def clustered():
    rng = np.random.default_rng(7)
    centres = rng.normal(size=(64, DIM))
    matrix = (centres[rng.integers(0, 64, N)] + 0.35 * rng.normal(size=(N, DIM))).astype(np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    ids = np.arange(N, dtype=np.int64) * 3 + 5  # unit ids are not row numbers
    queries = matrix[rng.integers(0, N, 8)] + 0.05 * rng.normal(size=(8, DIM)).astype(np.float32)
    return ids, matrix, queries.astype(np.float32), rng


@pytest.fixture(scope="module", params=["Flat", "IVF128,Flat", "HNSW16"])
def index(request, clustered):
    ids, matrix, _, _ = clustered
    return VectorIndex.build(ids, matrix, 0, request.param)


def _exact(ids, matrix, query, rows):
    scores = matrix[rows] @ query
    return set(ids[rows][np.argsort(-scores, kind="stable")[:K]].tolist())


@pytest.mark.parametrize("keep", [0.01, 0.1, 0.5])
def test_a_filtered_search_finds_what_an_exact_filtered_search_finds(index, clustered, keep):
    ids, matrix, queries, rng = clustered
    rows = np.sort(rng.choice(N, int(N * keep), replace=False))
    for query in queries:
        _, found = index.search(query, K, ids[rows])
        assert set(found[0].tolist()) == _exact(ids, matrix, query, rows)


def test_filtering_after_an_approximate_search_would_lose_most_of_a_one_percent_filter(clustered):
    ids, matrix, queries, rng = clustered
    index = VectorIndex.build(ids, matrix, 0, "IVF128,Flat")
    rows = np.sort(rng.choice(N, N // 100, replace=False))
    _, top = index.search(queries[0], 100)
    post = [i for i in top[0] if i in set(ids[rows].tolist())]
    assert len(post) < K  # what a post-filter would have: fewer than k of the k wanted
    _, found = index.search(queries[0], K, ids[rows])
    assert len(set(found[0].tolist()) - {-1}) == K


def test_allowed_units_the_index_lacks_and_too_few_allowed_leave_empty_slots(index, clustered):
    ids, _, queries, _ = clustered
    _, found = index.search(queries[0], K, np.array([ids[3], ids[9], 10**9], np.int64))
    assert sorted(found[0].tolist()) == sorted([ids[3], ids[9]] + [-1] * (K - 2))
    _, none = index.search(queries[0], K, np.zeros(0, np.int64))
    assert (none == -1).all()
