"""`--protocol` is recorded in the index, kept by later runs and queries, and `convis models` shows what
each model is fed before anything is downloaded."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from retrieval.cli.app import app


def test_protocol_is_recorded_and_one_index_keeps_one(video_folder, tmp_path):
    runner = CliRunner()
    index_dir = tmp_path / "idx"
    first = runner.invoke(app, ["index", str(video_folder), "-i", "efficientnet-lite0", "--index-dir",
                                str(index_dir), "--protocol", "paper", "--json", "--workers", "1"])
    assert first.exit_code == 0, first.output
    info = json.loads(runner.invoke(app, ["info", "--index-dir", str(index_dir), "--json"]).stdout)
    assert info["protocol"] == "paper"
    again = runner.invoke(app, ["index", str(video_folder), "--index-dir", str(index_dir), "--json"])
    assert again.exit_code == 0, again.output  # no --protocol: the index's own
    other = runner.invoke(app, ["index", str(video_folder), "--index-dir", str(index_dir), "--protocol", "fast"])
    assert other.exit_code == 2
    errors = [line for line in other.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "built with --protocol paper" in errors[0]
    bad = runner.invoke(app, ["index", str(video_folder), "--index-dir", str(tmp_path / "x"), "--protocol", "best"])
    assert bad.exit_code == 2 and "unknown protocol" in bad.stderr


def test_models_json_says_what_each_model_is_fed():
    runner = CliRunner()
    for protocol in ("fast", "paper"):
        result = runner.invoke(app, ["models", "--json", "--protocol", protocol])
        assert result.exit_code == 0, result.output
        rows = {(r["kind"], r["name"]): r for r in json.loads(result.stdout)}
        for row in rows.values():
            assert {"frames", "size", "pooling", "dtype"} <= set(row), row
    paper = {(r["kind"], r["name"]): r for r in json.loads(runner.invoke(app, ["models", "--json", "--protocol",
                                                                                "paper"]).stdout)}
    assert paper[("indexer", "dinov2")]["frames"] == "every frame"
    assert paper[("indexer", "videomae")]["default"] == "MCG-NJU/videomae-large"
    assert paper[("reranker", "llava-onevision")]["frames"].startswith("16 a video: linspace(0, n-1, N)")
    assert paper[("reranker", "internvl")]["frames"].startswith("16 a video: midpoints")
    assert paper[("reranker", "qwen2.5-vl")]["frames"].startswith("8 a video: 1 frame a second")
    assert "fp16 overflows" in paper[("reranker", "qwen2.5-vl")]["dtype"]


def test_models_lists_the_pair_signals_with_their_definitions():
    rows = {(r["kind"], r["name"]): r for r in json.loads(CliRunner().invoke(app, ["models", "--json"]).stdout)}
    clipscore, vqascore = rows[("signal", "clipscore")], rows[("signal", "vqascore")]
    assert clipscore["family"] == vqascore["family"] == "cross-modal"
    assert "cos(video 1, caption 2)" in clipscore["description"] and vqascore["default"] == "llava-onevision"
    assert 'P("Yes")' in vqascore["description"]
