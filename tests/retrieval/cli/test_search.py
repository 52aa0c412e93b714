"""`convis search TEXT`: a query's table, JSON and page, with a sentence for its anchor."""

import json

import pytest
from typer.testing import CliRunner

from indexers.text import MINILM
from retrieval.cli.app import app
from tests.paths import ROOT

runner = CliRunner()
CAPTIONS = ROOT / "examples" / "captions"
CUP = "a hand holding a cup"


def convis(*args):
    return runner.invoke(app, [*map(str, args)])


def test_search_ranks_the_clip_its_caption_describes_first(demo_index):
    result = convis("search", CUP, "--index-dir", demo_index, "-k", "3")
    assert result.exit_code == 0, result.output
    rows = [line.split("│")[1:3] for line in result.stdout.splitlines() if line.startswith("│")]
    assert [(rank.strip(), clip.strip()) for rank, clip in rows][0] == ("1", "cup.mp4") and len(rows) == 3
    assert f'clips matching "{CUP}"' in result.stdout and 'clips like' not in result.stdout
    assert "efficientnet-lite0 cannot compare text with clips" in " ".join(result.stderr.split())


def test_search_json_is_a_querys_json_plus_the_text(demo_index, example_videos):
    searched = convis("search", CUP, "--index-dir", demo_index, "-k", "3", "--json")
    queried = convis("query", "--anchor", example_videos / "box.mp4", "-c", "main-objects", "--index-dir",
                     demo_index, "-k", "3", "--json")
    assert searched.exit_code == 0 and queried.exit_code == 0, searched.output + queried.output
    found, asked = json.loads(searched.stdout), json.loads(queried.stdout)
    assert set(found) == set(asked) | {"text", "mode", "lift"} and found["mode"] == "hybrid"
    assert found["text"] == found["query"] == CUP and found["anchor"] is None and found["hits"][0]["path"] == "cup.mp4"
    ranks = {"keyword_rank", "vector_rank", "matched_terms", "coverage", "vector_score"}  # a hybrid hit's own keys
    assert {tuple(sorted(set(h) - ranks)) for h in found["hits"]} == {tuple(sorted(h)) for h in asked["hits"]}
    assert [c["key"] for c in found["concepts"]] == ["text"] and found["signals"]["text"].startswith("text:")
    assert [h["rank"] for h in found["hits"]] == [1, 2, 3]


def test_search_writes_the_query_page(demo_index, tmp_path):
    page = tmp_path / "search.html"
    result = convis("search", CUP, "--index-dir", demo_index, "-k", "2", "--html", page)
    assert result.exit_code == 0, result.output
    html = page.read_text()
    assert html.count('<li class="card hit"') == 2 and 'data-path="cup.mp4"' in html and CUP in html


def test_an_index_without_a_text_tower_is_one_line_and_a_failure(example_index):
    result = convis("search", CUP, "--index-dir", example_index)
    assert result.exit_code != 0 and not result.stdout
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("error: no signal here can search by text: efficientnet-lite0 has no text tower")


@pytest.mark.parametrize("text", ["   ", "x" * 1001])
def test_blank_or_overlong_text_is_one_line_and_a_failure(demo_index, text):
    result = convis("search", text, "--index-dir", demo_index)
    assert result.exit_code == 2 and not result.stdout
    assert len(result.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("weight, says", [("efficientnet-lite0=1", "efficientnet-lite0 has no text tower"),
                                          ("clip=1", "clip: that indexer is not in this index")])
def test_a_weight_for_a_signal_that_cannot_answer_is_one_line_and_a_failure(demo_index, weight, says):
    result = convis("search", CUP, "--index-dir", demo_index, "--signal", weight)
    assert result.exit_code == 2 and not result.stdout
    [line] = result.stderr.strip().splitlines()  # refused before any text model is loaded
    assert says in line


def test_a_location_search_of_the_descriptions_ranks_the_four_campus_pieces_first(demo_index):
    result = convis("search", "--concept", "location", "the campus square", "--index-dir", demo_index, "--json")
    assert result.exit_code == 0, result.output
    found = json.loads(result.stdout)
    assert sorted(h["path"] for h in found["hits"][:4]) == [f"campus_0{i}.mp4" for i in range(1, 5)]
    assert found["signals"] == {"text#location": f"text:{MINILM}#location"}
    assert all(h["recalled_by"] == [f"text:{MINILM}#location"] for h in found["hits"])


def test_a_concept_search_scores_each_unit_by_its_description_as_the_text_indexer_embeds_both(demo_index):
    from indexers.text import TextIndexer
    from retrieval.store.catalog import Catalog

    found = json.loads(convis("search", "-c", "main-action", "a hand turns a cup", "--index-dir", demo_index,
                              "--json").stdout)
    minilm = TextIndexer()
    query = minilm.embed_texts(["a hand turns a cup"])[0]
    with Catalog(demo_index / "catalog.duckdb", read_only=True) as cat:
        texts = {cat.units([u])[u].path: d.text for u, d in cat.concept_descriptions("main-action").items()}
    for hit in found["hits"]:
        expected = (float(query @ minilm.embed_texts([texts[hit["path"]]])[0]) + 1) / 2
        assert hit["total"] == pytest.approx(expected, abs=1e-4)
    assert found["hits"][0]["path"] == "cup.mp4"


def test_a_concept_without_descriptions_or_with_weights_is_one_line_and_a_failure(demo_index):
    missing = convis("search", "--concept", "camera angle", "--free-text", "a cup", "--index-dir", demo_index)
    assert missing.exit_code == 2 and not missing.stdout
    assert missing.stderr.strip() == (
        "error: this index holds no descriptions of camera-angle (described concepts: location, main-action, "
        "main-objects, main-subjects, order-of-actions); index with --captioner, or run `convis describe --concept "
        "\"camera-angle\"`")
    both = convis("search", "--concept", "location", "a cup", "--signal", "text=1", "--index-dir", demo_index)
    assert both.exit_code == 2 and "--signal and --concept do not go together" in both.stderr


def test_a_typo_of_a_concept_is_a_did_you_mean_as_in_a_query_not_a_paid_describe_run(demo_index):
    typo = convis("search", "--concept", "locaton", "the campus square", "--index-dir", demo_index)
    assert typo.exit_code == 2 and not typo.stdout
    assert typo.stderr.strip() == ("error: unknown concept 'locaton'; did you mean location? (use --free-text to ask "
                                   "for it as written)")
    as_written = convis("search", "--concept", "locaton", "--free-text", "x", "--index-dir", demo_index)
    assert as_written.exit_code == 2 and "convis describe" not in as_written.stderr
    assert ("did you mean location? (described concepts: location, main-action, main-objects, main-subjects, "
            "order-of-actions)") in as_written.stderr
