"""The performance harness: its pieces on their own, and a smoke run of `bench perf` end to end.

No timing is asserted (the machine is shared); only that every measurement is made and reported.
"""

import json

import numpy as np
import pytest
import typer
from typer.testing import CliRunner

from bench import perf
from bench.perf_cli import register
from retrieval.core.sampling import as_spec


def test_mixture_is_unit_vectors_and_queries_share_its_clusters():
    data, queries = perf.mixture(3000, 32, seed=1), perf.mixture(20, 32, seed=2)
    assert data.shape == (3000, 32) and data.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(data, axis=1), 1, rtol=1e-5)
    # a held-out query lies close to some collection vector (same centres), far from most
    best = (queries @ data.T).max(axis=1)
    assert np.median(best) > 0.5 > np.median(queries @ data.T)


def test_peak_rss_sees_an_allocation_and_measure_fills_it_in():
    with perf.PeakRss() as peak:
        block = np.ones(64 * 2**20 // 8)  # 64 MB touched
        del block
    assert peak.mb > 60
    row = perf.measure(perf.measure_decode, [], "pyav", 4, isolate=False)
    assert row.peak_rss_mb > 0 and row.frames == 0


def test_reference_way_and_ours_hand_the_model_the_same_frames(tmp_path):
    from retrieval.pipeline.indexing import decode_job

    clip = perf.make_clips(tmp_path, count=1)[0]
    for decoder in ("decord", "pyav"):
        with perf.only_decoder(decoder):
            ours = decode_job(perf._job(clip, 4)).frames[as_spec(4)][0]
        theirs, decoded = perf.streamed_frames(clip, decoder, 4)
        assert decoded == 40 and theirs.shape == ours.pixels.shape
        assert np.abs(theirs.astype(int) - ours.pixels.astype(int)).mean() < 8  # lossy resize paths differ
        every = perf.every_frame(clip, decoder)
        assert every.shape == (40, 96, 160, 3)
        assert np.abs(every[ours.indices[1]].mean() - ours.pixels[1].mean()) < 4  # the same frame, full size


def _rows(decode_s, embed_s, pipeline_s, reference_s):
    row = perf.IndexingResult
    return [row("decode", "sampled", "pyav", "-", 2, 16, decode_s),
            row("decode", "every frame", "pyav", "-", 2, 16, reference_s),
            row("embed", "sampled", "pyav", "m", 2, 16, embed_s, torch_threads=2, setting="default"),
            # as the engine runs it: fewer torch threads beside the decoder, same setting
            row("end-to-end", "sampled", "pyav", "m", 2, 16, pipeline_s, torch_threads=1, setting="default")]


def test_targets_are_judged_from_the_rows():
    report = perf.PerfReport({}, {}, indexing=_rows(1.0, 2.0, 2.4, 12.0))
    found = {target: ok for target, _, ok in perf.checks(report)}
    assert found["pyav, torch threads default: end-to-end >= 80% of min(decode, embed)"]  # 2.0 / 2.4 = 83%
    assert found["pyav: sampled decoding >= 10x faster than every frame (the paper's way)"]
    report.indexing = _rows(1.0, 2.0, 3.0, 5.0)
    assert not any(ok for _, _, ok in perf.checks(report))


@pytest.mark.slow
def test_smoke_run_writes_every_table(tmp_path):
    app = typer.Typer()
    app.callback()(lambda: None)  # keep `perf` a named sub-command, as under `convis bench`
    register(app)
    out = tmp_path / "performance.md"
    result = CliRunner().invoke(app, ["perf", "--smoke", "--out", str(out), "--json"])
    assert result.exit_code == 0, result.output
    text = out.read_text()
    for heading in ("## Indexing", "## Recall", "## Reranking", "## Targets"):
        assert heading in text
    data = json.loads(result.stdout)
    stages = {(r["stage"], r["way"], r["decoder"]) for r in data["indexing"]}
    assert stages == {(s, w, d) for d in ("decord", "pyav") for s, w in [
        ("decode", "sampled"), ("decode", "every frame"), ("decode", "every frame, streamed"),
        ("embed", "sampled"), ("end-to-end", "sampled")]} | {("end-to-end", "every frame", "decord")}
    kinds = {(r["index"], r["batch"]) for r in data["recall"]}
    from retrieval.store.vectors import FAISS_BLAS_THRESHOLD

    shipped = f"exact, FAISS's BLAS threshold {FAISS_BLAS_THRESHOLD}"
    assert {"exact (auto)", shipped, "HNSW", "IVF", "IVF-PQ"} == {k for k, _ in kinds}
    assert {b for _, b in kinds} == {1, 40}
    assert all(0 <= r["recall_at_100"] <= 1 and r["p50_ms"] > 0 for r in data["recall"])
    (rerank,) = data["rerank"]
    assert rerank["decodes"] == rerank["pairs"] + 1 and rerank["repeat_model_pairs"] == 0
    assert all(r["peak_rss_mb"] > 0 for r in data["indexing"] + data["recall"] + data["rerank"])
    assert "| decode | sampled | decord |" in text and "| IVF | IVF64,Flat | nprobe=16 | 1 |" in text
    # the saved report renders the same page again, and combines with another run's parts
    saved = tmp_path / "report.json"
    saved.write_text(result.stdout)
    again = tmp_path / "again.md"
    assert CliRunner().invoke(app, ["perf", "--from-json", str(saved), "--out", str(again)]).exit_code == 0
    assert again.read_text() == text
    later = {**data, "recall": [], "rerank": [], "indexing": data["indexing"][:1],
             "runs": [{**data["runs"][0], "command": "convis bench perf --sections indexing"}]}
    (tmp_path / "later.json").write_text(json.dumps(later))
    combined = tmp_path / "combined.md"
    result = CliRunner().invoke(app, ["perf", "--from-json", str(saved), "--from-json", str(tmp_path / "later.json"),
                                      "--out", str(combined)])
    assert result.exit_code == 0, result.output
    merged = combined.read_text()
    assert merged.count("Produced by `") == 2 and "`convis bench perf --sections indexing`" in merged
    assert "## Recall" in merged and merged.count("| decode |") == 1  # indexing from the later run only


def test_from_json_refuses_a_file_that_is_not_a_report(tmp_path):
    app = typer.Typer()
    app.callback()(lambda: None)
    register(app)
    bogus = tmp_path / "bogus.json"
    bogus.write_text('{"hello": 1}')
    result = CliRunner().invoke(app, ["perf", "--from-json", str(bogus)])
    assert result.exit_code == 2 and "not a saved `convis bench perf --json` report" in result.output
