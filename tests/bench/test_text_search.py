"""The text-search bench: its public queries, its metrics, and hybrid never below its better side on them."""

import json

import pytest
from typer.testing import CliRunner

from bench import text_search
from retrieval.cli.app import app
from tests.paths import EXAMPLES

KINDS = {"paraphrase", "rare term", "one word", "misspelling"}


def test_the_query_file_holds_sixty_queries_of_every_kind_about_bundled_clips():
    queries, data = text_search.load_queries()
    assert len(queries) >= 60 and {q.kind for q in queries} == KINDS
    bundled = {p.name for p in EXAMPLES.glob("*.mp4")}
    assert all(q.relevant <= bundled for q in queries)
    assert (text_search.REPO / data["videos"]).resolve() == EXAMPLES.resolve()


def test_reciprocal_rank_is_of_the_first_relevant_clip():
    assert text_search.reciprocal_rank(["a", "b", "c"], frozenset({"c", "b"})) == 0.5
    assert text_search.reciprocal_rank(["a"], frozenset({"z"})) == 0.0


def test_a_query_file_without_relevant_clips_is_refused(tmp_path):
    bad = tmp_path / "q.json"
    bad.write_text(json.dumps({"queries": [{"text": "x", "kind": "one word", "relevant": []}]}))
    with pytest.raises(text_search.TextBenchError, match="relevant clip"):
        text_search.load_queries(bad)


def test_the_section_reports_r1_and_mrr_of_each_mode_on_a_subset(demo_index):
    result = CliRunner().invoke(app, ["bench", "text-search", "--index-dir", str(demo_index), "--limit", "1",
                                      "--json"])
    assert result.exit_code == 0, result.output
    found = json.loads(result.output)
    assert found["queries"] == len(KINDS) and set(found["by_kind"]) == KINDS
    for mode in ("vector", "keyword", "hybrid"):
        assert set(found["overall"][mode]) == {"r@1", "mrr", "n"}
    table = CliRunner().invoke(app, ["bench", "text-search", "--index-dir", str(demo_index), "--limit", "1"])
    assert table.exit_code == 0 and "| all | 4 |" in table.output and "hybrid MRR" in table.output


@pytest.mark.slow
def test_hybrid_is_at_least_its_better_side_over_every_query(demo_index):
    queries, _ = text_search.load_queries()
    result = text_search.evaluate(demo_index, queries)
    metrics = result["overall"]
    for metric in ("r@1", "mrr"):
        assert metrics["hybrid"][metric] >= max(metrics["vector"][metric], metrics["keyword"][metric]), metrics
    for kind in result["by_kind"].values():  # on each kind, above the worse side at least
        for metric in ("r@1", "mrr"):
            assert kind["hybrid"][metric] >= min(kind["vector"][metric], kind["keyword"][metric]), kind
