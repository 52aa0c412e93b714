"""The store section: FAISS against Lance on a tiny synthetic collection, measured end to end (serving processes
included), its exact ground truth and its targets."""

import json
from dataclasses import replace

import numpy as np

from bench.perf import store
from bench.perf.config import Footage, PerfConfig
from bench.perf.sections.store import StoreResult, store_checks
from retrieval.store.vectors import lance_store


def _run(tmp_path, size, dim=16):
    config = PerfConfig.smoke_run(sections=("store",), sizes=(size,), dim=dim, single=12)
    said = []
    rows = store.run_store(config, Footage(tmp_path, tmp_path, []), said.append)
    return {r.engine: r for r in rows}, said


def test_the_collection_holds_the_exact_top_k_of_each_query(tmp_path, monkeypatch):
    monkeypatch.setattr(store, "CHUNK", 70)  # several chunks, their best merged
    data = store.make_collection(tmp_path, 200, 50, 16, 5)
    matrix, queries, truth = np.asarray(data.matrix), np.load(data.queries), np.load(tmp_path / "truth.npy")
    assert matrix.shape == (250, 16)
    np.testing.assert_allclose(np.linalg.norm(matrix, axis=1), 1.0, atol=1e-5)
    exact = np.argsort(-(queries @ matrix.T), axis=1, kind="stable")[:, : store.K]
    np.testing.assert_array_equal(truth, data.ids(0, 250)[exact])


def test_below_the_ann_threshold_both_engines_are_exact(tmp_path):
    rows, said = _run(tmp_path, 400)
    assert said == ["store: 400 x 16 FAISS", "store: 400 x 16 Lance"]
    faiss, lance = rows["FAISS"], rows["Lance"]
    assert faiss.recall_at_10 == lance.recall_at_10 == 1.0
    assert faiss.appended == lance.appended == 200 and faiss.queries == lance.queries == 12
    assert faiss.full_rebuild and not lance.full_rebuild and lance.index == "none (exact)"
    assert lance.serve_rss_mb > 0 and lance.disk_mb > 0 and lance.p99_ms >= lance.p50_ms > 0
    assert not list(tmp_path.iterdir())  # each size's files removed


def test_past_the_threshold_lance_serves_its_ann_index_and_retrains_on_growth(tmp_path, monkeypatch):
    monkeypatch.setattr(lance_store, "ANN_FROM", 300)
    lance = _run(tmp_path, 1000)[0]["Lance"]
    assert lance.index.startswith("IVF_RQ") and lance.params == "nprobes=32 refine=10"
    assert lance.full_rebuild and lance.reindex_s > 0  # 500 rows appended past a quarter of 1000
    assert lance.recall_at_10 >= 0.8


def test_recall_counts_the_exact_top_k_found():
    truth = np.array([[1, 2, 3, 4], [5, 6, 7, 8]])
    assert store.recall_at(np.array([[4, 3, 9, -1], [5, 6, 7, 8]]), truth) == 0.75


def test_checks_judge_the_largest_lance_row():
    row = StoreResult(5_000_000, 768, "Lance", "IVF_PQ 2048 x PQ96", "nprobes=32 refine=10", 600.0, 100_000, 12.0,
                      False, 0.0, 200, 20.0, 60.0, 0.97, 900.0, 16_000.0)
    assert [met for _, _, met in store_checks([row])] == [True, True, True]
    small = replace(row, vectors=1000, p50_ms=500.0)
    slow = replace(row, p50_ms=80.0, full_rebuild=True, serve_rss_mb=3000.0)
    assert [met for _, _, met in store_checks([small, slow])] == [False, False, False]
    assert store_checks([replace(row, engine="FAISS")]) == []


def test_the_command_builds_the_faiss_index_it_is_given(tmp_path, capsys):
    store.main(["600", "--dim", "16", "--engines", "faiss", "--faiss-index", "IVF8,SQ8", "--scratch", str(tmp_path)])
    row = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert (row["engine"], row["index"], row["vectors"]) == ("FAISS", "IVF8,SQ8", 600)
    assert row["recall_at_10"] > 0.5 and row["full_rebuild"]
