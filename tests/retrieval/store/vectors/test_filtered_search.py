"""A filtered FAISS search loses nothing: for Flat, IVF and HNSW indices and filters keeping 1%, 10% and 50% of the
units, its top k are those of an exact search over the allowed rows (computed here with numpy), where filtering an
approximate search's results afterwards loses most of them."""

import numpy as np
import pytest

from retrieval.store.vectors import filtered_search
from retrieval.store.vectors.faiss_index import VectorIndex

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
    # an inverted-file index probing one list: a filtered search that probed only nprobe lists would show it
    params = "nprobe=1" if "IVF" in request.param else None
    return VectorIndex.build(ids, matrix, 0, request.param, search_params=params)


def _exact(ids, matrix, query, rows):
    scores = matrix[rows] @ query
    return set(ids[rows][np.argsort(-scores, kind="stable")[:K]].tolist())


@pytest.mark.parametrize("keep", [0.01, 0.1, 0.5, 0.9])
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


def test_a_batch_of_queries_finds_for_each_what_an_exact_filtered_search_finds(index, clustered):
    """From GATHER_FROM_QUERIES queries a flat index's kept rows are gathered once into one matrix product."""
    ids, matrix, _, rng = clustered
    rows = np.sort(rng.choice(N, N // 10, replace=False))
    queries = matrix[rng.integers(0, N, filtered_search.GATHER_FROM_QUERIES + 4)]
    _, found = index.search(queries, K, ids[rows])
    assert [set(f.tolist()) for f in found] == [_exact(ids, matrix, q, rows) for q in queries]




def test_a_graph_index_over_compressed_storage_scans_that_storage_over_the_kept_rows(clustered):
    ids, matrix, queries, rng = clustered
    index = VectorIndex.build(ids, matrix, 0, "HNSW16_SQ8")
    stored = index.vectors(ids)  # what the index holds: the exact search is over these
    rows = np.sort(rng.choice(N, N // 10, replace=False))
    for query in queries[:3]:
        _, found = index.search(query, K, ids[rows])
        assert set(found[0].tolist()) == _exact(ids, stored, query, rows)


@pytest.mark.parametrize("spread", [3, 1000])  # ids a table can index, and ids too sparse for one
def test_unit_ids_are_found_at_their_rows_and_unknown_ones_nowhere(spread):
    id_map = np.arange(50, dtype=np.int64)[::-1] * spread + 7
    rows = filtered_search.Rows(id_map)
    asked = np.array([-5, 6, 7, 7 + spread, 7 + 49 * spread, 8 + 49 * spread, 10**12], np.int64)
    assert rows.of(asked).tolist() == [-1, -1, 49, 48, 0, -1, -1]


@pytest.mark.parametrize("factory", ["Flat", "HNSW16"])
def test_sparse_and_unknown_allowed_ids_find_what_an_exact_filtered_search_finds(clustered, factory):
    _, matrix, queries, rng = clustered
    ids = np.arange(N, dtype=np.int64) * 1000 + 1  # too sparse for a table
    index = VectorIndex.build(ids, matrix, 0, factory)
    rows = np.sort(rng.choice(N, N // 10, replace=False))
    allowed = np.concatenate([ids[rows][::-1], [-3, 2, 10**13], ids[rows[:5]]])  # unsorted, repeated, unknown
    _, found = index.search(queries[0], K, allowed)
    assert set(found[0].tolist()) == _exact(ids, matrix, queries[0], rows)
