"""The JSON a query or comparison prints: one schema for the CLI and the HTTP API; the table's times and title."""

import json
import shutil
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from retrieval.api import Engine
from retrieval.cli.app import app
from retrieval.pipeline.settings import IndexSettings
from retrieval.serve.server import create_app

LOCAL = "http://localhost"  # the app answers loopback host names only
runner = CliRunner()


def cli_json(*args):
    result = runner.invoke(app, [*map(str, args), "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_query_json_names_its_root_and_the_anchor_window(example_index, example_videos):
    data = cli_json("query", "-a", example_videos / "campus_01.mp4", "-c", "location", "--start", "0:02",
                    "--end", "8", "--index-dir", example_index, "-k", "2")
    assert data["root"] == str(example_videos.resolve())
    assert data["anchor"] == "campus_01.mp4"  # inside the root: relative to it, as every hit path is
    assert (data["start"], data["end"]) == (2.0, 8.0)
    assert data["empty_reason"] is None
    whole = cli_json("query", "-a", example_videos / "cup.mp4", "-c", "location", "--index-dir", example_index)
    assert (whole["start"], whole["end"]) == (None, None)


def test_an_anchor_outside_the_root_is_absolute(example_index, example_videos, tmp_path):
    outside = tmp_path / "elsewhere.mp4"
    shutil.copy(example_videos / "cup.mp4", outside)
    data = cli_json("query", "-a", outside, "-c", "location", "--index-dir", example_index, "-k", "1")
    assert data["anchor"] == str(outside.resolve())


def test_cli_and_http_print_the_same_query(example_index, example_videos):
    cli = cli_json("query", "-a", example_videos / "box.mp4", "-c", "location", "--start", "1", "--end", "9",
                   "--index-dir", example_index, "-k", "3")
    with TestClient(create_app(example_index), base_url=LOCAL) as client:
        http = client.post("/query", json={"anchor": "box.mp4", "concepts": ["location"], "k": 3, "start": 1,
                                           "end": 9}).json()
    for key in ("anchor", "start", "end", "concepts", "signals", "empty_reason"):
        assert http[key] == cli[key], key
    assert http["root"] == Path(cli["root"]).name  # the server names no folder of its disk
    assert [(h["path"], h["total"]) for h in http["hits"]] == [(h["path"], h["total"]) for h in cli["hits"]]


def test_compare_json_uses_the_same_paths(example_index, example_videos):
    data = cli_json("compare", example_videos / "box.mp4", example_videos / "cup.mp4", "-c", "location",
                    "--index-dir", example_index)
    assert (data["root"], data["a"], data["b"]) == (str(example_videos.resolve()), "box.mp4", "cup.mp4")


def test_table_title_names_the_window_and_times_are_one_format(example_index, example_videos):
    result = runner.invoke(app, ["query", "-a", str(example_videos / "campus_01.mp4"), "-c", "location",
                                 "--start", "2", "--end", "1:00", "--index-dir", str(example_index), "-k", "2"],
                           env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "clips like campus_01.mp4 0:02.0-1:00.0" in result.stdout
    assert "0:00.0-0:20.0" in result.stdout  # campus_02, one 20 s unit


@pytest.fixture
def lonely_index(tmp_path, example_videos):
    """An index of one clip: every query for it has nothing else to return."""
    folder = tmp_path / "one"
    folder.mkdir()
    shutil.copy(example_videos / "cup.mp4", folder / "cup.mp4")
    Engine(folder / ".convis").index(folder, ["efficientnet-lite0"], IndexSettings(workers=1))
    return folder


def test_no_results_says_why_and_exits_1(lonely_index):
    result = runner.invoke(app, ["query", "-a", str(lonely_index / "cup.mp4"), "-c", "location"])
    assert result.exit_code == 1
    assert result.stdout.startswith("no results for cup.mp4: every unit recalled (1, from cup.mp4) is part of the "
                                    "anchor itself")
    data = json.loads(runner.invoke(app, ["query", "-a", str(lonely_index / "cup.mp4"), "-c", "location",
                                          "--json"]).stdout)
    assert data["hits"] == [] and "part of the anchor itself" in data["empty_reason"]


def test_a_window_of_a_one_unit_anchor_says_why_its_file_is_left_out(example_index, example_videos):
    data = cli_json("query", "-a", example_videos / "box.mp4", "-c", "location", "--start", "2", "--end", "4",
                    "--index-dir", example_index, "-k", "9")
    assert len(data["hits"]) == 8 and "box.mp4" not in [h["path"] for h in data["hits"]]
    short = next(n for n in data["notices"] if n.startswith("8 results, not 9"))
    assert "give the anchor a time window" not in short  # it has one
    assert "overlap the anchor's window (0:02.0-0:04.0)" in short and "--segment" in short
    whole = cli_json("query", "-a", example_videos / "box.mp4", "-c", "location", "--index-dir", example_index,
                     "-k", "9")
    assert any("give the anchor a time window" in n for n in whole["notices"])
