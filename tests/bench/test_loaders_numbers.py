"""Ratings and scores in benchmark files are finite numbers: a NaN or an Infinity is one line naming the file and
the row, never a correlation that quietly comes out null."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from bench.loaders import BenchDataError, load_gt_pairs, load_pair_scores, load_ranked, load_retrieval_scores
from retrieval.cli.bench import app
from tests.paths import CONVIS_BENCH

GT = CONVIS_BENCH / "gt_conditioned_similarities.json"


def write(path, data) -> str:
    path.write_text(json.dumps(data))  # Python writes float("nan") as NaN, which its reader accepts
    return str(path)


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
def test_non_finite_ground_truth_names_the_file_and_row(tmp_path, bad):
    rows = [{"video1": "a.mp4", "video2": "b.mp4", "conditioned_similarity": {"Location": 3.0}},
            {"video1": "a.mp4", "video2": "c.mp4", "conditioned_similarity": {"Location": bad}}]
    path = write(tmp_path / "gt.json", rows)
    with pytest.raises(BenchDataError, match=r"gt\.json: entry 1 Location: expected a finite number"):
        load_gt_pairs(path)


def test_non_finite_scores_name_the_file_and_row(tmp_path):
    pairs = write(tmp_path / "m_similarities.json", [{"video1": "a", "video2": "b", "similarity": 0.5},
                                                     {"video1": "a", "video2": "c", "similarity": float("nan")}])
    with pytest.raises(BenchDataError, match=r"m_similarities\.json: entry 1: expected a finite number, got nan"):
        load_pair_scores(pairs)
    scores = write(tmp_path / "r.json", {"a.mp4": {"b.mp4": 0.1, "c.mp4": float("nan")}})
    with pytest.raises(BenchDataError, match=r"r\.json: a\.mp4 c\.mp4: expected a finite number"):
        load_retrieval_scores(scores)
    ranked = write(tmp_path / "ranked.json", [{"anchor": "a.mp4", "Location": {"b.mp4": float("nan")}}])
    with pytest.raises(BenchDataError, match=r"ranked\.json: entry 0 Location b\.mp4"):
        load_ranked(ranked)


def test_correlation_with_a_nan_score_is_one_line_exit_2(tmp_path):
    rows = json.loads(GT.read_text())[:5]
    scores = [{"video1": r["video1"], "video2": r["video2"], "similarity": 3.0 + i} for i, r in enumerate(rows)]
    scores[2]["similarity"] = float("nan")
    path = write(tmp_path / "model_similarities.json", scores)
    ran = CliRunner().invoke(app, ["correlation", "--gt", str(GT), "-s", path])
    assert ran.exit_code == 2, ran.output
    lines = ran.stderr.strip().splitlines()
    assert len(lines) == 1 and "model_similarities.json: entry 2: expected a finite number, got nan" in lines[0]
