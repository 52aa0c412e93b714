"""What scored a concept reads the same on every surface: a described concept's score is the mean of its visual
signal and its description signal, and query and compare, in the table, the JSON, the HTML page and the API,
all name both."""

import html
import json

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from retrieval.cli.app import app
from retrieval.serve.server import create_app
from retrieval.store.catalog import Catalog
from retrieval.store.snapshots import CATALOG_NAME

runner = CliRunner()


def cli(*args) -> str:
    result = runner.invoke(app, [*map(str, args)], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    return result.stdout


@pytest.fixture(scope="module")
def expected(demo_index) -> tuple[str, str]:
    """From the catalog itself: location's visual signal and its description signal, in short names."""
    with Catalog(demo_index / CATALOG_NAME, read_only=True) as catalog:
        [visual] = [row.indexer for row in catalog.indexers() if row.kind != "text"]
        [described] = [row.signal for row in catalog.description_signals() if row.concept == "location"]
    label = f"{visual.split(':')[0]} + text#location"
    assert described.startswith("text:") and described.endswith("#location")
    return label, f"recall similarity (location: {label})"


def test_query_and_compare_name_the_same_signals_everywhere(demo_index, example_videos, tmp_path, expected):
    label, how = expected
    box, cup = example_videos / "box.mp4", example_videos / "cup.mp4"
    where = ["-c", "location", "--index-dir", demo_index]
    query = json.loads(cli("query", "-a", box, *where, "-k", "3", "--json"))
    compare = json.loads(cli("compare", box, cup, *where, "--json"))
    assert query["concepts"][0]["scored_by"] == compare["concepts"][0]["scored_by"]
    assert query["concepts"][0]["scored_by_label"] == compare["concepts"][0]["scored_by_label"] == label
    assert query["scored_by"] == compare["scored_by"] == how

    for text in (cli("query", "-a", box, *where, "-k", "3"), cli("compare", box, cup, *where)):
        assert label in text and f"scored by {how}" in " ".join(text.split())

    cli("query", "-a", box, *where, "-k", "3", "--html", tmp_path / "query.html")
    cli("compare", box, cup, *where, "--html", tmp_path / "compare.html")
    for page in ("query.html", "compare.html"):
        shown = html.unescape((tmp_path / page).read_text(encoding="utf-8"))
        assert f"scored by {how}" in shown and f"· {label}</span>" in shown, page

    with TestClient(create_app(demo_index), base_url="http://localhost") as client:
        asked = client.post("/query", json={"anchor": "box.mp4", "concepts": ["location"], "k": 3}).json()
        compared = client.post("/compare", json={"a": "box.mp4", "b": "cup.mp4", "concepts": ["location"]}).json()
    for body in (asked, compared):
        assert body["scored_by"] == how and body["concepts"][0]["scored_by_label"] == label
        assert body["concepts"][0]["scored_by"] == query["concepts"][0]["scored_by"]
