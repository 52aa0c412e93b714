import numpy as np

from indexers import l2_normalise
from retrieval.store.vectors import faiss_index as vectors
from retrieval.store.vectors.faiss_index import (
    EXACT_LIMIT,
    VectorIndex,
    choose_factory,
    default_search_params,
    index_path,
    ivf_lists,
)


def data(n=500, dim=32, seed=0):
    rng = np.random.default_rng(seed)
    return np.arange(10, 10 + n, dtype=np.int64) * 3, l2_normalise(rng.normal(size=(n, dim)))


def test_faiss_results_equal_exact_numpy_search():
    ids, matrix = data()
    index = VectorIndex.build(ids, matrix, generation=1)
    queries = matrix[:20] + 0.01
    scores, found = index.search(queries, 10)
    exact = queries.astype(np.float32) @ matrix.T
    for q in range(20):
        order = np.argsort(-exact[q], kind="stable")[:10]
        np.testing.assert_array_equal(found[q], ids[order])
        np.testing.assert_allclose(scores[q], exact[q][order], rtol=1e-5)


def test_exact_batches_use_blas_and_agree_with_single_queries(monkeypatch):
    import faiss

    seen = []
    original = vectors._batch_search

    def spy(index, queries, k):
        seen.append(len(queries))
        return original(index, queries, k)

    monkeypatch.setattr(vectors, "_batch_search", spy)
    ids, matrix = data(n=2000, dim=48)
    index = VectorIndex.build(ids, matrix, generation=1)
    queries = l2_normalise(matrix[:64] + np.random.default_rng(1).normal(scale=0.05, size=(64, 48)))
    batch_scores, batch_ids = index.search(queries, 25)
    for q in range(0, 64, 7):
        scores, found = index.search(queries[q], 25)
        np.testing.assert_allclose(batch_scores[q], scores[0], atol=1e-5)
        assert len(set(batch_ids[q]) ^ set(found[0])) <= 2  # only a tie at the cut may swap
    assert seen == [64]  # the batch took the BLAS path, single queries did not
    assert faiss.cvar.distance_compute_blas_threshold == vectors.FAISS_BLAS_THRESHOLD  # restored


def test_vectors_come_back_by_unit_id():
    ids, matrix = data(50)
    index = VectorIndex.build(ids, matrix, generation=1)
    np.testing.assert_allclose(index.vectors(ids[[3, 7]]), matrix[[3, 7]])


def test_save_load_roundtrip_is_atomic_and_versioned(tmp_path):
    ids, matrix = data(100)
    path = index_path(tmp_path, "dinov2:facebook/dinov2-large")
    assert path.name == "dinov2_facebook_dinov2-large.faiss"
    VectorIndex.build(ids, matrix, generation=7).save(path)
    loaded = VectorIndex.load(path)
    assert (loaded.size, loaded.generation, loaded.factory) == (100, 7, "Flat")
    assert not list(path.parent.glob("*.tmp"))  # no temp files left behind
    path.write_bytes(path.read_bytes()[:100])  # torn file: refuse it, the caller rebuilds
    assert VectorIndex.load(path) is None


def test_index_type_follows_collection_size():
    assert choose_factory(5_000, 768) == "Flat"
    assert choose_factory(2_000_000, 768) != "Flat"


def clustered(n=6000, dim=16, centres=40, seed=0):
    """Unit vectors around a few centres, ids sparse like catalog unit ids."""
    rng = np.random.default_rng(seed)
    middle = l2_normalise(rng.normal(size=(centres, dim)))
    points = l2_normalise(middle[rng.integers(0, centres, n)] + 0.3 * rng.normal(size=(n, dim)) / np.sqrt(dim))
    return np.arange(n, dtype=np.int64) * 7 + 3, points


def test_large_collections_get_an_inverted_file_index_with_recorded_search_parameters():
    assert choose_factory(EXACT_LIMIT - 1, 768) == "Flat"
    assert choose_factory(1_000_000, 768) == "IVF2048,Flat"
    assert ivf_lists(100_000) == 512
    assert default_search_params("IVF2048,Flat", 1_000_000) == "nprobe=16"
    assert default_search_params("HNSW32,Flat", 200_000).startswith("efSearch=")
    assert default_search_params("Flat", 10) == ""


def test_ivf_index_keeps_exact_vectors_by_id_and_finds_the_exact_neighbours():
    ids, matrix = clustered()
    index = VectorIndex.build(ids, matrix, generation=1, factory="IVF32,Flat")
    assert (index.factory, index.search_params) == ("IVF32,Flat", "nprobe=16")
    np.testing.assert_array_equal(index.vectors(ids[[5, 4000]]), matrix[[5, 4000]])  # rescoring stays exact
    queries = matrix[:30] + 0.01
    _, found = index.search(queries, 20)
    exact = np.argsort(-(queries @ matrix.T), axis=1)[:, :20]
    recall = np.mean([len(set(f) & set(ids[e])) / 20 for f, e in zip(found, exact, strict=False)])
    assert recall >= 0.95


def test_search_parameters_survive_save_and_load(tmp_path):
    import faiss

    ids, matrix = clustered()
    path = tmp_path / "faiss" / "x.faiss"
    VectorIndex.build(ids, matrix, generation=3, factory="IVF32,Flat", search_params="nprobe=5").save(path)
    loaded = VectorIndex.load(path)
    assert (loaded.factory, loaded.search_params, loaded.generation) == ("IVF32,Flat", "nprobe=5", 3)
    assert faiss.extract_index_ivf(loaded.index).nprobe == 5
    np.testing.assert_array_equal(loaded.vectors(ids[:3]), matrix[:3])


def test_an_older_sidecar_without_search_parameters_gets_the_default(tmp_path):
    import json

    import faiss

    ids, matrix = clustered()
    path = tmp_path / "x.faiss"
    VectorIndex.build(ids, matrix, generation=1, factory="IVF32,Flat", search_params="nprobe=2").save(path)
    meta = json.loads(path.with_suffix(".json").read_text())
    del meta["search_params"]
    path.with_suffix(".json").write_text(json.dumps(meta))
    loaded = VectorIndex.load(path)
    assert loaded.search_params == "nprobe=16" and faiss.extract_index_ivf(loaded.index).nprobe == 16


def test_unknown_search_parameters_are_refused(tmp_path):
    import json

    import pytest

    ids, matrix = clustered(500)
    with pytest.raises(ValueError, match="search parameters"):
        VectorIndex.build(ids, matrix, generation=1, factory="Flat", search_params="nprobe=4")
    path = tmp_path / "x.faiss"
    VectorIndex.build(ids, matrix, generation=1).save(path)
    meta = json.loads(path.with_suffix(".json").read_text())
    path.with_suffix(".json").write_text(json.dumps({**meta, "search_params": "nprobe=4"}))
    assert VectorIndex.load(path) is None  # the caller rebuilds instead of searching with wrong settings


def test_hnsw_override_and_too_small_ivf():
    import pytest

    ids, matrix = clustered(2000)
    index = VectorIndex.build(ids, matrix, generation=1, factory="HNSW16,Flat")
    assert index.search_params == "efSearch=256"
    np.testing.assert_allclose(index.vectors(ids[:2]), matrix[:2])
    with pytest.raises(ValueError, match="at least 4096 vectors"):
        VectorIndex.build(ids, matrix, generation=1, factory="IVF4096,Flat")


def test_a_single_query_leaves_the_thread_setting_as_it_was():
    import faiss

    ids, matrix = clustered(1000)
    index = VectorIndex.build(ids, matrix, generation=1)
    before = faiss.omp_get_max_threads()
    index.search(matrix[:1], 5)
    index.search(matrix[:50], 5)
    assert faiss.omp_get_max_threads() == before
