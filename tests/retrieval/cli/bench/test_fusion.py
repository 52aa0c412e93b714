"""`convis bench fusion` end to end on a small release-format folder: JSON, weights file, tables, one-line errors."""

from __future__ import annotations

import json

import typer
from typer.testing import CliRunner

from retrieval.cli.bench.fusion import register
from retrieval.search.fusion import FusionModel
from tests.fusion_tables import write_release


def bench_app() -> typer.Typer:
    app = typer.Typer()

    @app.callback()
    def root() -> None:
        """bench"""

    register(app)
    return app


def test_cli_json_and_weights_file(tmp_path):
    root = write_release(tmp_path)
    out = tmp_path / "w.json"
    result = CliRunner().invoke(bench_app(), [
        "fusion", "--gt", str(root / "gt.json"), "-s", str(root / "computed_similarities"),
        str(root / "computed_conditioned_similarities"), "--folds", "4", "--both", "--out", str(out), "--json",
    ])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["splits"] == ["random", "video"]
    fused = [r for r in data["results"] if r["signal"] == "fused"]
    assert {(r["split"], r["concept"]) for r in fused} == {
        (s, c) for s in ("random", "video") for c in ("main-action", "location")}
    assert set(data["weights"]["location"]["weights"]) == {"dinov2", "reranker:llava-onevision"}
    assert all(len(v) == 4 for v in data["fold_choices"]["video"].values())
    model = FusionModel.load(out)
    assert model.predict("location", {"dinov2": 0.8}).used == ["dinov2"]


def test_cli_tables_and_signal_selection(tmp_path):
    root = write_release(tmp_path)
    args = ["fusion", "--gt", str(root / "gt.json"), "-s", str(root), "--folds", "3", "--group-by-video"]
    result = CliRunner().invoke(bench_app(), [*args, "--use", "dinov2"])
    assert result.exit_code == 0, result.output
    assert "fused" in result.stdout and "Learned weights" in result.stdout
    assert "reranker:llava-onevision" not in result.stdout

    bad = CliRunner().invoke(bench_app(), [*args, "--use", "nope"])
    assert bad.exit_code == 2 and bad.stderr.startswith("error: --use nope: no such signal")
    missing = CliRunner().invoke(bench_app(), ["fusion", "--gt", str(tmp_path / "no.json"), "-s", str(root)])
    assert missing.exit_code == 2 and len(missing.stderr.strip().splitlines()) == 1
