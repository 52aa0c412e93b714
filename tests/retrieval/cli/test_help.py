"""Help as a new user reads it: no Python types or braces, the concepts listed, one default k everywhere."""

import re

import pytest
from typer.testing import CliRunner

from retrieval.api import DEFAULT_K
from retrieval.cli.app import app
from retrieval.core.concepts import CONVIS_CONCEPTS
from tests.paths import ROOT

runner = CliRunner()
COMMANDS = [[], ["index"], ["query"], ["compare"], ["serve"], ["info"], ["ls"], ["export"], ["tag"], ["models"],
            ["bench"], ["bench", "retrieval"], ["bench", "correlation"], ["dupes"]]


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c) or "convis")
def test_help_shows_no_python_types_or_braces(command):
    result = runner.invoke(app, [*command, "--help"], env={"COLUMNS": "120"})
    assert result.exit_code == 0, result.output
    assert not re.search(r"<(path|str|int|float|bool|list\[str\]|int range|float range)>", result.stdout), result.stdout
    usage = result.stdout.splitlines()[0]
    assert not re.search(r"\{\w+\}|\[\[|\[[a-z]", usage), usage  # FOLDER, [PATHS...]: not {folder}, [paths]


def test_query_help_lists_the_convis_concepts():
    text = " ".join(runner.invoke(app, ["query", "--help"]).stdout.split()).replace("- ", "-")  # wrapped at hyphens
    assert all(key in text for key in CONVIS_CONCEPTS)


def test_the_web_app_asks_for_as_many_results_as_the_cli():
    page = (ROOT / "retrieval" / "serve" / "ui" / "index.html").read_text()
    assert re.search(r'id="k"[^>]*value="(\d+)"', page).group(1) == str(DEFAULT_K)
    help_text = " ".join(runner.invoke(app, ["query", "--help"], env={"COLUMNS": "200"}).stdout.split())
    assert f"How many results. [default: {DEFAULT_K};" in help_text
