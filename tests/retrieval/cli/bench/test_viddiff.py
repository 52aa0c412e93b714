"""`convis bench viddiff` end to end through the real bench app: numbers, JSON fields, one-line errors."""

import json

import pytest
from typer.testing import CliRunner

from retrieval.cli.bench import app

ROWS = [
    {"sample_key": "s0", "split": "easy", "domain": "fitness", "action": "fitness_0", "action_description": "squat",
     "videos": json.dumps([{"path": "videos/a.mp4", "frames_trim": [0, 9]},
                           {"path": "videos/b.mp4", "frames_trim": [0, 9]}]),
     "differences_annotated": json.dumps({"0": {"description": "the feet are wider apart"},
                                          "1": {"description": "the squat is deeper"},
                                          "2": {"description": "the squat is faster"}, "3": None}),
     "differences_gt": json.dumps({"0": "a", "1": "b", "2": "c", "3": None}), "n_differences_open_prediction": 2},
    {"sample_key": "s1", "split": "hard", "domain": "diving", "action": "diving_0", "action_description": "a dive",
     "videos": [{"path": "videos/a.mp4", "frames_trim": [0, 5]}, {"path": "videos/a.mp4", "frames_trim": [5, 9]}],
     "differences_annotated": {"0": {"description": "the diver makes a bigger splash"},
                               "1": {"description": "the jump is higher"}},
     "differences_gt": {"0": "b", "1": "a"}, "n_differences_open_prediction": 3},
]
# s0: 0 right, 1 wrong, 2 (gt 'c') and 9 extra; s1: 0 right, 1 missing -> 2 / 4
CLOSED = {"s0": {"0": "a", "1": "a", "2": "c", "9": "b"}, "s1": {"0": "b"}}
# s0 has 3 items for 2 allowed: "x" is cut; s1's item is unrelated to both gt differences
OPEN = {"s0": {"p": {"description": "the stance is wider, feet further apart", "prediction": "a"},
               "q": {"description": "a deeper squat", "prediction": "a"},
               "x": {"description": "the squat is faster", "prediction": "b"}},
        "s1": {"r": {"description": "the violinist plays a red guitar", "prediction": "b"}}}


@pytest.fixture
def files(tmp_path):
    (tmp_path / "videos").mkdir()
    (tmp_path / "videos" / "a.mp4").write_bytes(b"")
    (tmp_path / "dataset.jsonl").write_text("\n".join(json.dumps(r) for r in ROWS))
    closed, open_ = tmp_path / "closed.json", tmp_path / "open.json"
    closed.write_text(json.dumps(CLOSED))
    open_.write_text(json.dumps(OPEN))
    return tmp_path, closed, open_


def invoke(*args):
    return CliRunner().invoke(app, ["viddiff", *map(str, args)])


def test_closed_table(files):
    folder, closed, _ = files
    result = invoke("--gt", folder, "--pred", closed)
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    cells = [[c.strip() for c in line.split("│")[1:-1]] for line in lines if line.startswith("│")]
    assert ["overall", "all", "50.00", "2 / 4"] in cells
    assert ["split", "easy", "50.00", "1 / 2"] in cells and ["action", "diving_0", "50.00", "1 / 2"] in cells
    assert ["count", "missing predictions", "1", ""] in cells and ["count", "extra keys", "2", ""] in cells
    assert "mode: closed (detected from the predictions)" in result.stderr
    assert "sample s0: video not found" in result.stderr  # videos/b.mp4 is absent


def test_closed_json(files):
    folder, closed, _ = files
    result = invoke("--gt", folder / "dataset.jsonl", "--pred", closed, "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["mode"] == "closed" and data["mode_detected"] is True and data["samples"] == 2
    assert data["overall"] == {"value": 50.0, "correct": 2, "scored": 4}
    assert data["by_domain"]["fitness"] == {"value": 50.0, "correct": 1, "scored": 2}
    assert (data["missing_predictions"], data["extra_keys"], data["invalid_letters"]) == (1, 2, 0)
    assert list(data["dataset_problems"]) == ["s0"]


def test_open_with_sbert_says_it_is_not_comparable(files):
    folder, _, open_ = files
    result = invoke("--gt", folder, "--pred", open_, "--judge", "sbert", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    # s0: 0 <- p ('a', right), 1 <- q ('a', flipped); s1: nothing matches -> 1 / 4
    assert data["overall"] == {"value": 25.0, "correct": 1, "scored": 4}
    assert data["errors"]["err_nomatch"] == 50.0 and data["errors"]["err_flippedpred"] == 25.0
    assert data["truncated_samples"] == 1 and "dropped key(s) x" in result.stderr
    assert "not comparable" in data["comparability"] and "gpt-4o" in data["comparability"]
    assert data["reverse_statement_check"].startswith("not applied")
    table = invoke("--gt", folder, "--pred", open_, "--judge", "sbert:0.5", "--mode", "open")
    assert table.exit_code == 0, table.output
    assert "25.00" in table.stdout and "1 / 4" in table.stdout
    assert "not comparable with VidDiff's published leaderboard" in table.stdout


def one_error_line(result) -> str:
    assert result.exit_code != 0, result.output
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    return lines[0]


@pytest.mark.parametrize("content, message", [
    (b"\xff\xfe not utf-8", "cannot read"),
    (b'{"s0": ', "not valid JSON"),
    (b"{}", "empty"),
    (b'{"s0": {"0": {"description": "no letter"}}}', "without a 'prediction'"),
    (b'[{"0": "a"}]', "follow the dataset order"),
    (b'{"s0": [1, 2]}', "not an object"),
])
def test_bad_predictions(files, content, message):
    folder, closed, _ = files
    closed.write_bytes(content)
    assert message in one_error_line(invoke("--gt", folder, "--pred", closed))


def test_bad_arguments(files):
    folder, closed, open_ = files
    assert "not found" in one_error_line(invoke("--gt", folder, "--pred", folder / "nope.json"))
    assert "dataset not found" in one_error_line(invoke("--gt", folder / "nope", "--pred", closed))
    assert "--mode" in one_error_line(invoke("--gt", folder, "--pred", closed, "--mode", "half"))
    assert "--judge" in one_error_line(invoke("--gt", folder, "--pred", open_, "--judge", "gpt-4o"))
    assert "open mode needs" in one_error_line(invoke("--gt", folder, "--pred", closed, "--mode", "open"))
    assert "--pred" in one_error_line(invoke("--gt", folder))
