"""End to end through the CLI: real EfficientNet-Lite0 weights on the real example footage."""

import json
import shutil
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from retrieval.cli.app import app
from tests.media import make_clip
from tests.paths import ROOT

runner = CliRunner()


def invoke(*args):
    result = runner.invoke(app, [str(a) for a in args])
    return result


def query_json(*args):
    result = invoke("query", *args, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_location_query_finds_the_same_place(example_index, example_videos):
    data = query_json("--anchor", example_videos / "campus_01.mp4", "--concept", "location",
                      "--index-dir", example_index, "-k", "5")
    top = [h["path"] for h in data["hits"]]
    assert sorted(top[:3]) == ["campus_02.mp4", "campus_03.mp4", "campus_04.mp4"]
    assert "campus_01.mp4" not in top  # the anchor itself is never a result
    totals = [h["total"] for h in data["hits"]]
    assert totals == sorted(totals, reverse=True)


def test_segment_anchor_finds_other_segments_of_its_source(tmp_path, example_videos):
    folder = tmp_path / "videos"
    shutil.copytree(example_videos, folder)
    index_dir = tmp_path / "seg-index"
    result = invoke("index", folder, "--indexer", "efficientnet-lite0", "--segment", "10s",
                    "--index-dir", index_dir, "--json", "--workers", "1")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["units"] > report["indexed"]  # long clips became several units
    data = query_json("--anchor", folder / "campus_01.mp4", "--start", "0s", "--end", "10s",
                      "--concept", "location", "--index-dir", index_dir, "-k", "6")
    hits = data["hits"]
    assert all(h["path"].startswith("campus_") for h in hits)
    assert not any(h["path"] == "campus_01.mp4" and h["start"] < 10 for h in hits)  # not itself
    assert any(h["path"] == "campus_01.mp4" and h["start"] >= 10 for h in hits)  # its other segment


def test_weighted_concepts_report_each_score_and_the_eq2_total(example_index, example_videos):
    data = query_json("--anchor", example_videos / "box.mp4", "-c", "location=3", "-c", "main-objects=1",
                      "--index-dir", example_index)
    weights = {c["key"]: c["weight"] for c in data["concepts"]}
    assert weights == {"location": 0.75, "main-objects": 0.25}
    for hit in data["hits"]:
        expected = 0.75 * hit["scores"]["location"] + 0.25 * hit["scores"]["main-objects"]
        assert hit["total"] == pytest.approx(expected, abs=1e-3)


def test_new_anchor_is_embedded_on_the_fly(example_index, example_videos, tmp_path):
    anchor = make_clip(tmp_path / "grey.mp4", frames=20, fps=10, size=(96, 64))
    data = query_json("--anchor", anchor, "-c", "location", "--index-dir", example_index, "-k", "3")
    assert len(data["hits"]) == 3


@pytest.mark.parametrize("args, message", [
    (["--anchor", "missing.mp4", "-c", "location"], "anchor not found"),
    (["--anchor", "{examples}/cup.mp4", "-c", "location=abc"], "must be a number"),
    (["--anchor", "{notes}", "-c", "location"], "not a readable video"),
])
def test_query_errors_are_one_line_with_nonzero_exit(example_index, example_videos, tmp_path, args, message):
    notes = tmp_path / "notes.mp4"
    notes.write_text("hello")
    args = [a.format(examples=example_videos, notes=notes) for a in args]
    result = invoke("query", *args, "--index-dir", example_index)
    assert result.exit_code == 2
    assert message in result.stderr and "Traceback" not in result.output


def test_unknown_indexer_is_a_clear_error(tmp_path, example_videos):
    result = invoke("index", example_videos, "--indexer", "nope", "--index-dir", tmp_path / "i")
    assert result.exit_code == 2 and "unknown indexer 'nope'" in result.stderr


def test_a_faiss_index_that_cannot_work_is_one_line_before_any_decoding(tmp_path, example_videos):
    result = invoke("index", example_videos, "-i", "efficientnet-lite0", "--index-dir", tmp_path / "i",
                    "--faiss-index", "IVF8,PQ7", "--json")
    assert result.exit_code == 2 and "FAISS index 'IVF8,PQ7' does not work" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and not result.stdout.strip()


def test_info_lists_indexers_and_counts(example_index):
    result = invoke("info", "--index-dir", example_index, "--json")
    data = json.loads(result.stdout)
    assert data["files_ok"] == 9 and data["files_failed"] == 0
    assert data["indexers"][0]["indexer"].startswith("efficientnet-lite0")


def test_python_cli_py_is_the_same_app():
    out = subprocess.run([sys.executable, "cli.py", "--help"], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0
    for command in ("index", "query", "info", "bench"):
        assert command in out.stdout
