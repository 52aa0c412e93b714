"""`convis bench perf` end to end: a smoke run writes every table, and saved reports render again.

No timing is asserted (the machine is shared); only that every measurement is made and reported.
"""

import json

import pytest
import typer
from typer.testing import CliRunner

from retrieval.cli.bench.perf import register
from retrieval.store.vectors.faiss_index import FAISS_BLAS_THRESHOLD


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


def test_help_names_every_section_the_harness_runs():
    from bench.perf import section_names
    from retrieval.cli.bench.perf import SECTION_NAMES

    assert SECTION_NAMES == section_names()


def test_the_ocr_section_reports_frames_per_second_and_renders_again(tmp_path):
    pytest.importorskip("rapidocr_onnxruntime")
    app = typer.Typer()
    app.callback()(lambda: None)
    register(app)
    out = tmp_path / "performance.md"
    result = CliRunner().invoke(app, ["perf", "--smoke", "--sections", "ocr", "--out", str(out), "--json"])
    assert result.exit_code == 0, result.output
    (row,) = json.loads(result.stdout)["ocr"]
    assert row["frames"] > 0 and row["seconds"] > 0 and row["frames_per_s"] == round(row["frames"] / row["seconds"], 3)
    assert row["provider"] in ("CPU", "CUDA") and "## On-screen text (ocr)" in out.read_text()
    saved = tmp_path / "report.json"
    saved.write_text(result.stdout)
    again = tmp_path / "again.md"
    assert CliRunner().invoke(app, ["perf", "--from-json", str(saved), "--out", str(again)]).exit_code == 0
    assert again.read_text() == out.read_text()


def test_a_run_prints_its_page_and_writes_no_file_unless_asked(tmp_path, monkeypatch):
    from bench.perf import PerfReport
    from bench.perf.measuring import machine_info

    app = typer.Typer()
    app.callback()(lambda: None)
    register(app)
    saved = tmp_path / "report.json"
    saved.write_text(json.dumps(PerfReport(machine_info(), {}).as_dict(), default=str))
    where = tmp_path / "elsewhere"
    where.mkdir()
    monkeypatch.chdir(where)
    result = CliRunner().invoke(app, ["perf", "--from-json", str(saved)])
    assert result.exit_code == 0, result.output
    assert list(where.iterdir()) == [] and "wrote" not in result.output
    assert result.stdout.startswith("#")  # the page, printed
