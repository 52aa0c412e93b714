"""Tables at a default terminal's 80 columns and a wide one's 200: every score and every file name printed whole
(a narrow terminal gets one block of lines a result instead of a table), and `models` keeps its weights whole."""

import json
import re

import pytest
from typer.testing import CliRunner

from retrieval.cli.app import app

WIDTHS = ("80", "200")
runner = CliRunner()


def run(args: list, columns: str) -> str:
    ran = runner.invoke(app, list(map(str, args)), env={"COLUMNS": columns})
    assert ran.exit_code == 0, ran.output
    return ran.stdout


def printed_as(value: float) -> set[str]:
    """How the table may print a JSON score (4 decimals there, 3 here: either side of a rounding edge)."""
    return {f"{value + d:.3f}" for d in (-0.00005, 0.0, 0.00005)}


def assert_whole(text: str, hits: list[dict]) -> None:
    assert "…" not in text, text  # rich's mark for what it cut
    lines = text.splitlines()
    for hit in hits:
        assert any(hit["path"] in line for line in lines), (hit["path"], text)
        numbers = set(re.findall(r"\d\.\d{3}", text))
        for value in [*hit["scores"].values(), hit["total"], *(hit.get("composed") or {}).values()]:
            if value is not None and value != 1.0:  # composed's weight: not a score
                assert printed_as(value) & numbers, (value, text)


@pytest.mark.parametrize("columns", WIDTHS)
@pytest.mark.parametrize("concepts", [["--change", "a cup instead of a box"],
                                      ["-c", "main-action=0.6", "-c", "main-objects=0.4"]], ids=["change", "two"])
def test_query_tables_print_scores_and_names_whole(demo_index, example_videos, columns, concepts):
    args = ["query", "--anchor", example_videos / "box.mp4", *concepts, "--index-dir", demo_index, "-k", "3"]
    hits = json.loads(run([*args, "--json"], columns))["hits"]
    assert_whole(run(args, columns), hits)


@pytest.mark.parametrize("columns", WIDTHS)
def test_models_keeps_its_weights_column_whole(columns):
    rows = json.loads(run(["models", "--json"], columns))
    text = run(["models"], columns)
    assert "…" not in text, text
    lines = text.splitlines()
    for row in rows:
        for field in ("name", "default", "weights"):
            assert any(str(row[field]) in line for line in lines), (row[field], text)


def test_a_wide_terminal_keeps_the_table(demo_index, example_videos):
    text = run(["query", "--anchor", example_videos / "box.mp4", "--change", "a cup instead of a box",
                "--index-dir", demo_index, "-k", "3"], "200")
    assert "┃ rank" in text and "efficientnet-lite0" in text  # the table, and what scored each concept
