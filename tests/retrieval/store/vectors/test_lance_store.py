import numpy as np
import pytest

from indexers import l2_normalise
from retrieval.store.vectors import lance_store
from retrieval.store.vectors.lance_store import LanceLocation, LanceVectors, table_name

DIM = 16


def data(n=400, seed=0, first=10):
    rng = np.random.default_rng(seed)
    return np.arange(first, first + n, dtype=np.int64) * 3, l2_normalise(rng.normal(size=(n, DIM))).astype(np.float32)


def exact(queries, ids, matrix, k):
    scores = queries @ matrix.T
    order = np.argsort(-scores, axis=1, kind="stable")[:, :k]
    return np.take_along_axis(scores, order, axis=1), ids[order]


@pytest.fixture
def store(tmp_path):
    return LanceVectors(LanceLocation(str(tmp_path / "lance")), "openclip:ViT-B-32/laion#a concept")


def test_results_equal_exact_numpy_search_below_ann_from(store):
    ids, matrix = data()
    store.append(ids, matrix)
    queries = l2_normalise(matrix[:7] + 0.05).astype(np.float32)
    scores, found = store.search(queries, 10)
    want_scores, want_ids = exact(queries, ids, matrix, 10)
    np.testing.assert_array_equal(found, want_ids)
    np.testing.assert_allclose(scores, want_scores, atol=1e-5)
    one_scores, one = store.search(queries[3], 10)  # a single query row, as VectorIndex takes it
    np.testing.assert_array_equal(one[0], want_ids[3])
    assert one_scores.shape == (1, 10) and scores.dtype == np.float32 and found.dtype == np.int64


def test_k_beyond_the_rows_held_and_an_empty_store(store):
    assert store.size == 0 and store.version == 0
    scores, found = store.search(np.ones(DIM, np.float32), 5)
    assert found.tolist() == [[-1]] and scores[0, 0] == -np.inf
    ids, matrix = data(n=3)
    store.append(ids, matrix)
    _, found = store.search(matrix[:1], 10)
    assert sorted(found[0].tolist()) == sorted(ids.tolist())


@pytest.mark.parametrize("terms", [lance_store.TERMS_PER_FILTER, 2])
def test_allowed_gives_full_recall(store, monkeypatch, terms):
    monkeypatch.setattr(lance_store, "TERMS_PER_FILTER", terms)  # 2: the filter searched in parts and merged
    ids, matrix = data()
    store.append(ids, matrix)
    rng = np.random.default_rng(1)
    allowed = np.concatenate([rng.choice(ids, 15, replace=False), ids[100:130], [999_999]])  # ids, a run, unheld
    keep = np.isin(ids, allowed)
    queries = matrix[:5]
    scores, found = store.search(queries, 10, allowed=allowed)
    want_scores, want_ids = exact(queries, ids[keep], matrix[keep], 10)
    np.testing.assert_array_equal(found, want_ids)
    np.testing.assert_allclose(scores, want_scores, atol=1e-5)
    _, few = store.search(queries, 10, allowed=ids[:3])
    assert (few[:, 3:] == -1).all() and set(few[0, :3].tolist()) == set(ids[:3].tolist())


def test_append_of_held_ids_does_not_double(store):
    ids, matrix = data(n=50)
    version = store.append(ids[:30], matrix[:30])
    assert store.append(ids[:30], matrix[:30]) == version  # nothing new: no version
    assert store.append(ids, matrix) == version + 1  # the 20 new rows only, as one version
    assert store.size == 50
    assert sorted(store.unit_ids().tolist()) == sorted(ids.tolist())
    store.append(np.array([7, 7]), matrix[:2])  # an id twice in one append: once
    assert store.size == 51
    assert store.append(np.zeros(0, np.int64), np.zeros((0, DIM), np.float32)) == store.version


def test_unindexed_tail_is_searched_exactly_after_an_index_build(store, monkeypatch):
    monkeypatch.setattr(lance_store, "ANN_FROM", 300)
    ids, matrix = data(n=600)
    store.append(ids, matrix)
    assert store.maybe_reindex() and store.indexed
    assert not store.maybe_reindex()  # nothing grew: no retraining
    tail_ids, tail = data(n=40, seed=2, first=5_000)
    store.append(tail_ids, tail)
    scores, found = store.search(tail, 1)  # not in the index yet: scanned exactly
    np.testing.assert_array_equal(found[:, 0], tail_ids)
    np.testing.assert_allclose(scores[:, 0], 1.0, atol=1e-4)
    assert not store.maybe_reindex()  # 40 rows past 600 stay below GROWTH: added to the index untrained
    assert store._index_stats().num_unindexed_rows == 0
    np.testing.assert_array_equal(store.search(tail, 1)[1][:, 0], tail_ids)
    more_ids, more = data(n=200, seed=3, first=9_000)
    store.append(more_ids, more)
    assert store.maybe_reindex()  # 840 rows: grown by more than a quarter since training on 600
    assert not store.maybe_reindex()


def test_short_vectors_get_more_bits_a_dimension():
    assert [lance_store.rq_bits(d) for d in (768, 384, 128, 64, 16, 8)] == [1, 1, 1, 2, 8, 8]


@pytest.mark.parametrize("kind", ["rq", "pq"])
def test_either_index_kind_finds_each_rows_own_vector_first(store, monkeypatch, kind):
    monkeypatch.setattr(lance_store, "ANN_FROM", 300)
    monkeypatch.setattr(lance_store, "ANN_KIND", kind)
    ids, matrix = data(n=600)
    store.append(ids, matrix)
    assert store.maybe_reindex() and store.indexed
    assert store._index_stats().index_type == f"IVF_{kind.upper()}"
    np.testing.assert_array_equal(store.search(matrix[:40], 1)[1][:, 0], ids[:40])
    with pytest.raises(ValueError, match="unknown Lance index kind"):
        lance_store.ann_config("hnsw", 600, DIM)


def test_delete(store):
    ids, matrix = data(n=40)
    store.append(ids, matrix)
    store.delete(ids[:5])
    assert store.size == 35
    _, found = store.search(matrix[:5], 3)
    assert not np.isin(found, ids[:5]).any()
    with pytest.raises(KeyError):
        store.vectors(ids[:1])


def test_vectors_in_the_order_asked(store):
    ids, matrix = data(n=40)
    store.append(ids, matrix)
    np.testing.assert_array_equal(store.vectors(ids[[7, 2, 7, 30]]), matrix[[7, 2, 7, 30]])


def test_a_second_reader_sees_an_append_only_after_checkout_latest(store):
    ids, matrix = data(n=60)
    store.append(ids[:40], matrix[:40])
    reader = LanceVectors(store.location, store.signal)
    late = LanceVectors(store.location, "another signal")  # opened before its table exists
    store.append(ids[40:], matrix[40:])
    LanceVectors(store.location, "another signal").append(ids[:5], matrix[:5])
    assert reader.size == 40 and late.size == 0
    assert ids[50] not in reader.search(matrix[50:51], 1)[1]
    reader.checkout_latest()
    late.checkout_latest()
    assert reader.size == 60 and reader.version == store.version and late.size == 5
    assert reader.search(matrix[50:51], 1)[1][0, 0] == ids[50]


def test_location_parse(tmp_path, monkeypatch):
    assert LanceLocation.parse("lance", tmp_path).uri == str(tmp_path / "lance")
    monkeypatch.chdir(tmp_path)
    assert LanceLocation.parse("lance:vectors", tmp_path / "index").uri == str(tmp_path / "vectors")
    for name in ("AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL_S3", "AWS_REGION"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:5000")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "key")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret")
    s3 = LanceLocation.parse("lance:s3://bucket/prefix/", tmp_path)
    assert s3.uri == "s3://bucket/prefix"
    assert s3.storage_options == {"aws_endpoint": "http://127.0.0.1:5000", "aws_region": "us-east-1",
                                  "aws_access_key_id": "key", "aws_secret_access_key": "secret",
                                  "allow_http": "true"}
    with pytest.raises(ValueError):
        LanceLocation.parse("faiss", tmp_path)


def test_table_names_are_safe_and_distinct():
    names = {table_name(s) for s in ("camera:angle", "camera/angle", "camera#angle")}
    assert len(names) == 3 and all(set(n) <= set("abcdefghijklmnopqrstuvwxyz0123456789_-") for n in names)


@pytest.fixture
def s3_bucket(monkeypatch):
    """A local S3 API (moto's server) with one bucket, and the standard AWS settings pointing at it."""
    server_module = pytest.importorskip("moto.server")
    boto3 = pytest.importorskip("boto3")
    server = server_module.ThreadedMotoServer(ip_address="127.0.0.1", port=0)
    server.start()
    host, port = server.get_host_and_port()
    for name, value in {"AWS_ENDPOINT_URL": f"http://{host}:{port}", "AWS_ACCESS_KEY_ID": "key",
                        "AWS_SECRET_ACCESS_KEY": "secret", "AWS_DEFAULT_REGION": "us-east-1"}.items():
        monkeypatch.setenv(name, value)
    for name in ("AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL_S3", "AWS_REGION"):
        monkeypatch.delenv(name, raising=False)
    boto3.client("s3").create_bucket(Bucket="vectors")
    yield "s3://vectors/index"
    server.stop()


def test_a_table_on_s3_is_appended_and_read_by_a_second_reader(s3_bucket, tmp_path):
    location = LanceLocation.parse(f"lance:{s3_bucket}", tmp_path)
    writer = LanceVectors(location, "a signal")
    ids, matrix = data(n=50)
    writer.append(ids[:40], matrix[:40])
    reader = LanceVectors(location, "a signal")
    writer.append(ids, matrix)
    assert reader.size == 40 and writer.size == 50
    reader.checkout_latest()
    assert reader.size == 50 and reader.search(matrix[45:46], 1)[1][0, 0] == ids[45]
    np.testing.assert_array_equal(reader.vectors(ids[[45, 3]]), matrix[[45, 3]])
