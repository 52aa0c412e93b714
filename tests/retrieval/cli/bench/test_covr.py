"""`convis bench covr` end to end on files written here: the numbers, the JSON, and one-line errors."""

import json
import subprocess
import sys

import pytest
import typer
from typer.testing import CliRunner

from retrieval.cli.bench.covr import register

CSV = ("query_id,query_video,target_video,target_videos_ids,modification\n"
       "0,v1,t1,\"['t1', 't2']\",with a half twist\n"
       "1,v2.mp4,t3,\"['t3']\",\"two somersaults, not one\"\n"
       "2,v3,t4,\"['t4']\",backwards\n")
# query 0, masked: t1 x t2 -> AP@K = (1 + 2/3) / 2 = 5/6 (K >= 3), R@K = 1
# query 1: t3 at 6 -> AP@5 = 0, AP@10+ = 1/6; R@5 = 0, R@10+ = 1; query 2 is missing -> 0
RANKING = {"0": ["v1.mp4", "t1.mp4", "x", "t2"], "1": ["y", "z", "w", "u", "s", "t3", "v2"]}
EXPECTED = {"mAP@5": 27.78, "mAP@10": 33.33, "mAP@25": 33.33, "mAP@50": 33.33,  # 5/18, 1/3, 1/3, 1/3
            "Recall@5": 33.33, "Recall@10": 66.67, "Recall@25": 66.67, "Recall@50": 66.67}


def app() -> typer.Typer:
    root = typer.Typer()
    root.callback()(lambda: None)  # keep `covr` a named sub-command, as under `convis bench`
    register(root)
    return root


@pytest.fixture
def files(tmp_path):
    gt, scores = tmp_path / "test.csv", tmp_path / "ranking.json"
    gt.write_text(CSV)
    scores.write_text(json.dumps(RANKING))
    return gt, scores


def invoke(*args):
    return CliRunner().invoke(app(), ["covr", *map(str, args)])


def test_json_gives_the_hand_worked_numbers(files):
    gt, scores = files
    result = invoke("--gt", gt, "--scores", scores, "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert {k: data[k] for k in EXPECTED} == EXPECTED
    assert data["queries"] == 3 and data["ranked"] == 2 and data["missing"] == ["2"]
    assert "1 of 3 queries are not in" in result.stderr


def test_table(files):
    gt, scores = files
    result = invoke("--gt", gt, "-s", scores)
    assert result.exit_code == 0, result.output
    rows = {line.split()[1]: line.split()[3] for line in result.stdout.splitlines() if "@" in line}
    assert rows == {k: f"{v:.2f}" for k, v in EXPECTED.items()}
    assert "│ queries ranked │ 2 of 3 │" in result.stdout


def one_error_line(result) -> str:
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    return lines[0]


def test_missing_column(files):
    gt, scores = files
    gt.write_text(CSV.replace("target_videos_ids,", "targets,"))
    assert "target_videos_ids" in one_error_line(invoke("--gt", gt, "--scores", scores))


def test_malformed_json(files):
    gt, scores = files
    scores.write_text('{"0": ["t1", ')
    assert "not valid JSON" in one_error_line(invoke("--gt", gt, "--scores", scores))


def test_missing_files_and_options(files, tmp_path):
    gt, scores = files
    assert "not found" in one_error_line(invoke("--gt", tmp_path / "no.csv", "--scores", scores))
    assert "not found" in one_error_line(invoke("--gt", gt, "--scores", tmp_path / "no.json"))
    assert "--scores" in one_error_line(invoke("--gt", gt))


def test_importing_the_command_stays_light():
    code = ("import sys, retrieval.cli.bench.covr; heavy = {'torch', 'transformers', 'scipy'} & set(sys.modules); "
            "print(sorted(heavy))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
