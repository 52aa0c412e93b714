"""`convis bench correlation`, `retrieval` and `make-split` end to end on the released files."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bench import paper
from retrieval.cli.bench import app
from tests.paths import CONVIS_BENCH

DATA = CONVIS_BENCH
GT = DATA / "gt_conditioned_similarities.json"
CONDITIONED_DIR = DATA / "computed_conditioned_similarities"
GLOBAL_DIR = DATA / "computed_similarities"

runner = CliRunner()


# SBERT on the other two caption sets: Table 3 rows whose values are computed from the release's files
RELEASE_ROWS = {(paper.GLOBAL, "InternVL2_5-8B"), (paper.GLOBAL, "Qwen2.5-VL-7B-Instruct")}


def _run(*args: str):
    return runner.invoke(app, [str(a) for a in args])


def test_cli_correlation_json(tmp_path):
    result = _run("correlation", "--gt", GT, "--similarities", CONDITIONED_DIR, GLOBAL_DIR, "--json",
                  "--csv", tmp_path / "r.csv", "--chart", tmp_path / "r.png")
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)["results"]
    assert len(rows) == 6 * 5 + 6 * 5
    for r in rows:
        release = (r["kind"], r["model"]) in RELEASE_ROWS
        assert r["paper_source"] == (paper.RELEASE if release else paper.PRINTED)
        assert r["rho"] == pytest.approx(r["paper_rho"], abs=0.1)
    with open(tmp_path / "r.csv") as f:
        assert len(list(csv.DictReader(f))) == len(rows)
    assert (tmp_path / "r.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_cli_correlation_table_shows_ours_and_paper():
    result = _run("correlation", "--gt", GT, "-s", CONDITIONED_DIR / "Location")
    assert result.exit_code == 0, result.output
    assert re.search(r"LLaVA-OV-7B\s+│\s+58\.94\s+│\s+58\.94\s+│\s+\+0\.00\s+│\s+47\.72\s+│\s+47\.72\s+│\s+\+0\.00",
                     result.stdout)


def test_cli_correlation_names_a_release_row_and_its_delta_as_the_releases():
    result = _run("correlation", "--gt", GT, "-s", DATA / "computed_similarities_more" / "videomae-large")
    assert result.exit_code == 0, result.output
    assert "VideoMAE (cosine) (release): correlation" in result.stdout
    assert re.search(r"rho\s+┃\s+release\s+┃\s+Δ\s+┃\s+tau\s+┃\s+release\s+┃\s+Δ", result.stdout)
    assert re.search(r"Location\s+│\s+37\.81\s+│\s+37\.8\s+│\s+\+0\.0\s+│\s+26\.44\s+│\s+26\.4\s+│\s+\+0\.0",
                     result.stdout)
    assert " ".join(result.stdout.split()).endswith(paper.RELEASE_NOTE)


@pytest.mark.parametrize(
    "make_args, message",
    [
        (lambda t: ["--gt", t / "missing.json", "-s", GLOBAL_DIR], "not found"),
        (lambda t: ["--gt", GT, "-s", t / "missing"], "not found"),
        (lambda t: ["--gt", _write(t / "bad.json", "{oops"), "-s", GLOBAL_DIR], "not valid JSON"),
        (lambda t: ["--gt", GT, "-s", _write(t / "x_similarities.json",
                                             '[{"video1":"q.mp4","video2":"r.mp4","similarity":3}]')],
         "no pair matches"),
        (lambda t: ["--gt", GT], "give at least one --similarities"),
    ],
)
def test_cli_correlation_bad_input_is_one_line(tmp_path, make_args, message):
    result = _run("correlation", *make_args(tmp_path))
    assert result.exit_code == 2
    assert message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.output


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_cli_make_split_then_retrieval(tmp_path):
    ranked = tmp_path / "ranked.json"
    result = _run("make-split", "--pairs", GT, "--out", ranked)
    assert result.exit_code == 0, result.output
    split = json.loads(ranked.read_text())
    # a model scoring each candidate by the human relevance itself: top-1 is perfect
    scores = {e["anchor"]: {c: -r for c, r in e["Location"].items()} for e in split}
    folder = tmp_path / "Location" / "oracle"
    folder.mkdir(parents=True)
    (folder / "oracle_Location_ranking.json").write_text(json.dumps(scores))
    result = _run("retrieval", "--gt", ranked, "--scores", tmp_path / "Location", "--json")
    assert result.exit_code == 0, result.output
    rows = {(r["model"], r["concept"]): r for r in json.loads(result.stdout)["results"]}
    oracle = rows[("oracle", "location")]
    assert (oracle["recall"], oracle["precision"], oracle["f1"], oracle["ndcg"]) == (100, 100, 100, 100)
    assert oracle["n"] == len(split)
    assert rows[("random choice", "location")]["recall"] < 100


def test_cli_retrieval_missing_gt(tmp_path):
    result = _run("retrieval", "--gt", tmp_path / "ranked.json", "--scores", DATA / "computed_retrieval_scores")
    assert result.exit_code == 2
    assert result.stderr.startswith("error: ranking file not found")
