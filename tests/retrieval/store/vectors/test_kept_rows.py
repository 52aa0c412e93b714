"""A filter that comes back is answered from its kept rows gathered in half precision, and still exactly: the half-
precision scores only propose candidates, rescored in float32, and a query whose k-th score does not clear the
rounding bound on every row left out is searched exactly (checked here against numpy over the kept rows)."""

import numpy as np
import pytest

from retrieval.store.vectors import filtered_search, kept_rows
from retrieval.store.vectors.faiss_index import VectorIndex

N, DIM, K = 6_000, 48, 10


def _unit(rows):
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(3)
    centres = rng.normal(size=(32, DIM))
    matrix = _unit(centres[rng.integers(0, 32, N)] + 0.4 * rng.normal(size=(N, DIM)))
    ids = np.arange(N, dtype=np.int64) * 7 + 2
    return ids, matrix, _unit(matrix[rng.integers(0, N, 6)] + 0.05 * rng.normal(size=(6, DIM))), rng


def _exact(ids, matrix, queries, rows):
    scores = queries @ matrix[rows].T
    return [ids[rows][np.argsort(-s, kind="stable")[:K]].tolist() for s in scores]


@pytest.mark.parametrize("factory", ["Flat", "IVF64,Flat", "HNSW16"])
def test_a_filter_asked_again_is_answered_from_its_gathered_rows_exactly(data, factory, monkeypatch):
    ids, matrix, queries, rng = data
    index = VectorIndex.build(ids, matrix, 0, factory, search_params="nprobe=1" if "IVF" in factory else None)
    rows = np.sort(rng.choice(N, N // 10, replace=False))
    index.search(queries[0], K, ids[rows])  # first seen: searched without gathering

    def refused(*_):
        raise AssertionError("searched the index again instead of the gathered rows")
    monkeypatch.setattr(filtered_search, "_selected", refused)
    monkeypatch.setattr(filtered_search, "_scanned", refused)
    for query, truth in zip(queries, _exact(ids, matrix, queries, rows), strict=True):
        _, found = index.search(query, K, ids[rows])
        assert found[0].tolist() == truth
    _, batch = index.search(queries, K, ids[rows])
    assert batch.tolist() == _exact(ids, matrix, queries, rows)


def test_rows_closer_than_half_precision_tells_apart_are_ranked_in_float32(data, monkeypatch):
    ids, matrix, _, _ = data
    rng = np.random.default_rng(11)
    base = _unit(rng.normal(size=(1, DIM)))[0]
    # 600 rows whose scores spread over ~1e-3, within half precision's rounding bound (~5e-4) but far above
    # float32's: the bound refuses and the query is searched exactly
    close = _unit(base + 1e-3 * rng.normal(size=(600, DIM)))
    twins = np.vstack([matrix, close])
    twin_ids = np.arange(len(twins), dtype=np.int64) * 5 + 1
    index = VectorIndex.build(twin_ids, twins, 0, "IVF64,Flat")
    rows = np.r_[np.arange(0, N, 20), np.arange(N, len(twins))]
    query = _unit((base + 0.05 * rng.normal(size=DIM))[None])
    scores = np.sort(query @ twins[rows].T)[0, ::-1]
    assert scores[K - 1] - scores[K] > 1e-6  # float32 tells the 10th from the 11th
    truth = set(_exact(twin_ids, twins, query, rows)[0])
    assert truth <= set(twin_ids[N:].tolist())
    exact_searches, gathers = [], []
    selected, gather = filtered_search._selected, kept_rows.gather
    monkeypatch.setattr(filtered_search, "_selected", lambda *a: exact_searches.append(1) or selected(*a))
    monkeypatch.setattr(kept_rows, "gather", lambda *a: gathers.append(1) or gather(*a))
    for _ in range(3):
        _, found = index.search(query, K, twin_ids[rows])
        assert set(found[0].tolist()) == truth
    assert len(gathers) == 1 and len(exact_searches) == 3  # gathered for the second, but the bound refused both


def test_the_half_precision_bound_holds_for_every_row():
    rng = np.random.default_rng(5)
    rows = np.vstack([_unit(rng.normal(size=(500, DIM))), 1e-6 * rng.normal(size=(20, DIM)).astype(np.float32),
                      30.0 * _unit(rng.normal(size=(20, DIM)))])
    gathered = kept_rows.gather(np.arange(len(rows)), lambda at: rows[at])
    half = rows.astype(np.float16).astype(np.float32)
    assert np.linalg.norm(rows - half, axis=1).max() <= gathered.error
    queries = _unit(rng.normal(size=(30, DIM)))
    approx, at = gathered.index.search(queries, len(rows))
    exact = np.take_along_axis(queries @ rows.T, at, axis=1)
    assert (np.abs(approx - exact) <= gathered.bound(np.linalg.norm(queries, axis=1))[:, None]).all()


def test_a_number_beyond_half_precision_makes_the_bound_refuse():
    rows = np.full((3, 4), 1e6, np.float32)
    assert kept_rows.gather(np.arange(3), lambda at: rows[at]).error == np.inf


def test_a_large_batch_is_rescored_in_parts_and_each_query_is_exact(data):
    ids, matrix, _, rng = data
    index = VectorIndex.build(ids, matrix, 0, "HNSW16")
    rows = np.sort(rng.choice(N, N // 5, replace=False))
    queries = _unit(matrix[rng.integers(0, N, 500)] + 0.1 * rng.normal(size=(500, DIM)))
    assert len(queries) > filtered_search.REFINED_ROWS // (K + filtered_search.EXTRA_CANDIDATES)
    _, found = index.search(queries, K, ids[rows])  # a batch gathers at once
    truth = _exact(ids, matrix, queries, rows)
    assert all(set(a) == set(b) for a, b in zip(found.tolist(), truth, strict=True))
