"""`convis diff` from the command line: every option in --help, VidDiff's JSON, a side-by-side page, ranking, and
one clear line for bad input."""

import json
import re

import pytest
from typer.testing import CliRunner

from bench.tiny.vlm import build_qwen_vl
from retrieval.cli.app import app

OPTIONS = ("--action", "--statement", "--statements", "--open", "--reranker", "--mode", "--symmetric", "--fps",
           "--rerank-batch", "--index-dir", "--device", "--html", "--json")


@pytest.fixture(scope="module")
def qwen(tmp_path_factory):
    return "qwen2-vl:" + str(build_qwen_vl(tmp_path_factory.mktemp("vlm") / "qwen2-vl-tiny"))


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)  # no index near: the answer cache is the user's


def run(*args):
    return CliRunner().invoke(app, ["diff", *map(str, args)])


def test_help_lists_every_option():
    ran = run("--help")
    assert ran.exit_code == 0
    text = re.sub(r"\x1b\[[0-9;]*m", "", ran.output)
    for option in OPTIONS:
        assert option in text, option
    assert "A B [MORE]..." in text


def test_closed_json_is_viddiffs_prediction_format_with_probabilities(example_videos, qwen, tmp_path):
    page = tmp_path / "diff.html"
    ran = run(example_videos / "bikes.mp4", example_videos / "box.mp4", "--action", "riding", "-s", "faster",
              "-s", "more people", "-r", qwen, "--symmetric", "--json", "--html", page)
    assert ran.exit_code == 0, ran.output
    out = json.loads(ran.stdout)
    assert set(out["predictions"]) <= {"0", "1"} and all(v in ("a", "b") for v in out["predictions"].values())
    for key in ("0", "1"):
        p = out["probabilities"][key]
        assert p["a"] + p["b"] == pytest.approx(1.0)
    assert out["model_calls"] == 4 and out["symmetric"] and out["task"] == "closed"
    assert [len(s["orders"]) for s in out["statements"]] == [2, 2]
    html = page.read_text()
    assert "bikes.mp4" in html and "box.mp4" in html and "more people" in html and "data:image/jpeg" in html


def test_three_clips_rank_the_others_against_the_first(example_videos, qwen):
    ran = run(example_videos / "bikes.mp4", example_videos / "box.mp4", example_videos / "cup.mp4", "--action",
              "riding", "-s", "faster", "-r", qwen, "--json")
    assert ran.exit_code == 0, ran.output
    out = json.loads(ran.stdout)
    assert [c["rank"] for c in out["candidates"]] == [1, 2]
    differences = [c["differences"] for c in out["candidates"]]
    assert differences == sorted(differences, reverse=True)
    assert out["model_calls"] == 2


@pytest.mark.parametrize("args, message", [
    ([], "no difference statements: give --statement"),
    (["-s", "x", "--open", "2"], "not both"),
    (["-s", "x", "--mode", "best"], "--mode must be one of"),
    (["-s", "x", "--action", "x" * 10_000], "the action description has 10000 characters"),
    (["-s", " "], "a difference statement is empty"),
    (["-s", "x", "--fps", "0"], "--fps must be a positive number"),
    (["-s", "x", "--fps", "inf"], "--fps must be a positive number"),
])
def test_bad_input_is_one_line_and_exit_2(example_videos, qwen, args, message):
    action = [] if "--action" in args else ["--action", "riding"]
    ran = run(example_videos / "bikes.mp4", example_videos / "box.mp4", *action, "-r", qwen, *args)
    assert ran.exit_code == 2, ran.output
    assert message in ran.output and len(ran.output.strip().splitlines()) == 1 and "Traceback" not in ran.output


def test_a_statements_file_that_is_not_utf8_or_empty_is_one_line(example_videos, qwen, tmp_path):
    for content, message in ((b"\xff\xfebad", "is not UTF-8 text"), (b"", "holds no difference statements")):
        path = tmp_path / "s.txt"
        path.write_bytes(content)
        ran = run(example_videos / "bikes.mp4", example_videos / "box.mp4", "--action", "riding", "--statements",
                  path, "-r", qwen)
        assert ran.exit_code == 2 and message in ran.output and len(ran.output.strip().splitlines()) == 1


def test_two_identical_files_and_a_single_clip_are_one_line(example_videos, qwen):
    same = run(example_videos / "bikes.mp4", example_videos / "bikes.mp4", "--action", "riding", "-s", "x", "-r", qwen)
    assert same.exit_code == 2 and "the same video" in same.output
    one = run(example_videos / "bikes.mp4", "--action", "riding", "-s", "x", "-r", qwen)
    assert one.exit_code == 2 and "give two clips" in one.output


def test_the_table_says_its_frames_in_words_the_cache_only_when_used_and_cant_tell_near_one_half(example_videos,
                                                                                                 qwen):
    args = ["diff", *map(str, (example_videos / "bikes.mp4", example_videos / "box.mp4")), "--action", "riding",
            "-s", "faster", "-r", qwen]
    first = CliRunner().invoke(app, args, env={"COLUMNS": "200"})
    assert first.exit_code == 0, first.output
    assert re.search(r"frames: \d+ frames a clip", first.stdout) and "per-second" not in first.stdout
    assert "1 model call;" in first.stdout and "cache" not in first.stdout  # nothing was cached yet
    again = json.loads(CliRunner().invoke(app, [*args, "--json"]).stdout)
    assert (again["model_calls"], again["cached_answers"]) == (0, 1)
    statement = again["statements"][0]
    near = abs(statement["p_a"] - 0.5) < 0.1
    assert statement["told"] == ("can't tell" if near else statement["prediction"])
    assert statement["prediction"] in ("a", "b")  # VidDiff's prediction still takes the larger side
    row = next(line for line in first.stdout.splitlines() if "faster" in line)
    assert ("can't tell" in row) == near and f"{statement['p_a']:.3f}" in row
