"""Keyword and hybrid text search: BM25 over each unit's stored text, alone or fused with the vector scores (the
vector score lifted by the unit's IDF-weighted coverage of the query), the keyword index kept in step with the
catalog."""

import json
import shutil
from dataclasses import replace

import pytest
from typer.testing import CliRunner

from retrieval.api import Engine, SearchRequest
from retrieval.cli.app import app
from retrieval.search import hybrid
from retrieval.search.results import Hit
from retrieval.search.signals import SignalError
from retrieval.store.catalog import Catalog
from retrieval.store.keyword.index import KEYWORD_DIR, KeywordHit, KeywordIndex, terms
from retrieval.store.keyword.unit_texts import stamp
from tests.indexes import CAPTIONS, indexed_copies

# exact rare terms added to the example captions: a name, and names whose hyphens and digits must survive
RARE = {"cup": "Kipchoge", "bikes": "F-16", "box": "PS-2"}
CLIPS = ("cup.mp4", "box.mp4", "bikes.mp4", "campus_01.mp4", "campus_02.mp4")


@pytest.fixture(scope="module")
def rare_index(tmp_path_factory):
    """Five example clips with their captions, three of them naming a rare term (EfficientNet-Lite0 + text)."""
    base = tmp_path_factory.mktemp("rare")
    captions = base / "captions"
    shutil.copytree(CAPTIONS, captions)
    for stem, term in RARE.items():
        caption = captions / f"{stem}.txt"
        caption.write_text(caption.read_text().strip() + f" A label reads {term}.\n")
    videos = indexed_copies(base, CLIPS, ["efficientnet-lite0"], captions=captions)
    return videos / ".convis"


def _paths(result) -> list[str]:
    return [h.path for h in result.hits]


def test_terms_keep_hyphens_digits_and_dots_and_drop_stop_words():
    assert terms("An F-16 and a PS-2, at 3.5 GHz.") == ["f-16", "f", "16", "ps-2", "ps", "2", "3.5", "3", "5", "ghz"]
    assert terms("match/campus_01.mp4") == ["match", "campus", "01.mp4", "01", "mp4"]


@pytest.mark.parametrize("stem", sorted(RARE))
@pytest.mark.parametrize("mode", ["keyword", "hybrid"])
def test_a_rare_term_ranks_its_unit_first(rare_index, stem, mode):
    result = Engine(rare_index).search(SearchRequest(RARE[stem], k=5, mode=mode))
    first = result.hits[0]
    assert first.path == f"{stem}.mp4" and first.keyword["keyword_rank"] == 1
    assert RARE[stem].lower() in first.keyword["matched_terms"]
    if mode == "keyword":  # only the unit whose text holds the exact term is found
        assert _paths(result) == [f"{stem}.mp4"] and result.signals == {"bm25": "bm25"}


def test_hybrid_total_is_the_fused_score_that_orders_the_list(rare_index):
    engine = Engine(rare_index)
    text = "a hand holds a box labelled PS-2"
    fused = engine.search(SearchRequest(text, k=5, mode="hybrid"))
    by_vector = {h.path: h.total for h in engine.search(SearchRequest(text, k=5, mode="vector")).hits}
    coverage = {h.path: h.keyword["coverage"] for h in fused.hits}
    assert coverage["box.mp4"] == max(coverage.values()) > 0.5 and _paths(fused)[0] == "box.mp4"  # all but "labelled"
    for hit in fused.hits:
        assert hit.keyword["vector_score"] == pytest.approx(by_vector[hit.path]) == pytest.approx(hit.recall_total)
        assert hit.total == pytest.approx(hybrid.fused_score(by_vector[hit.path], coverage[hit.path]), abs=1e-4)
    totals = [h["total"] for h in fused.as_dict()["hits"]]
    assert totals == sorted(totals, reverse=True)  # the printed score is the one that ordered the list
    assert fused.as_dict()["lift"] == hybrid.LIFT and fused.as_dict()["mode"] == "hybrid"


def _hit(unit_id: int, total: float) -> Hit:
    return Hit(unit_id, f"{unit_id}.mp4", 0, 0.0, 10.0, {"text": total}, total)


def test_one_common_word_does_not_lift_a_clip_above_the_vector_sides_first():
    # a long paraphrase: the vector side's first holds none of its words; the second holds one common word, which
    # makes it keyword rank 1 (reciprocal rank fusion put it first)
    by_vector = [_hit(1, 0.78), _hit(2, 0.70), _hit(3, 0.66)]
    found = [KeywordHit(2, 1.9, ("back",), coverage=0.12)]
    assert [h.unit_id for h in hybrid.fused(by_vector, found)] == [1, 2, 3]
    # the whole query held by a clip the vector side ranks second: it comes first
    assert [h.unit_id for h in hybrid.fused(by_vector, [KeywordHit(2, 5.0, ("f-16",), coverage=1.0)])][0] == 2


def test_a_clip_without_a_vector_score_stays_last_without_a_total():
    out = hybrid.fused([_hit(1, 0.7), replace(_hit(2, 0.0), total=None)], [KeywordHit(2, 3.0, ("cup",), 1.0)])
    assert [(h.unit_id, h.total is None) for h in out] == [(1, False), (2, True)]


@pytest.mark.parametrize("mode", ["keyword", "hybrid"])
def test_a_singular_word_finds_the_clip_whose_caption_holds_its_plural(demo_index, mode):
    result = Engine(demo_index).search(SearchRequest("bicycle", k=3, mode=mode))
    assert _paths(result)[0] == "bikes.mp4" and result.hits[0].keyword["matched_terms"] == ["bicycle"]
    assert not result.as_dict()["no_match"]


def test_hybrid_confidence_reads_the_printed_score(demo_index):
    result = Engine(demo_index).search(SearchRequest("a hand holds a cardboard box", k=9, mode="hybrid"))
    labels = [r.get("confidence") for r in result.as_dict()["hits"]]
    runs = [label for n, label in enumerate(labels) if n == 0 or label != labels[n - 1]]
    assert labels[0] and len(runs) == len(set(runs))  # one cut read on the ordering score: a label never comes back


def test_keyword_recall_keeps_only_the_allowed_units(rare_index):
    with Catalog(rare_index / "catalog.duckdb", read_only=True) as catalog:
        index = KeywordIndex.build(catalog)
        ids = {u.path: u.unit_id for u in catalog.units(index.unit_ids.tolist()).values()}
    everyone = [h.unit_id for h in index.search("a hand holds", 10)]
    assert everyone[:2] and set(everyone[:2]) == {ids["cup.mp4"], ids["box.mp4"]}
    allowed = {ids["box.mp4"], ids["campus_01.mp4"]}
    kept = index.search("a hand holds", 10, allowed=allowed)
    assert [h.unit_id for h in kept] == [u for u in everyone if u in allowed] == [ids["box.mp4"]]
    assert index.search("Kipchoge", 10, allowed=allowed) == [] and index.search("Kipchoge", 10, allowed=set()) == []


@pytest.mark.parametrize("mode", ["keyword", "hybrid"])
def test_where_filters_keyword_and_hybrid_search_before_ranking(rare_index, mode):
    engine = Engine(rare_index)
    # the rare term's own clip is filtered out: nothing else holds the word, so keyword mode finds nothing
    kept = engine.search(SearchRequest("Kipchoge", k=5, mode=mode, where=("name != cup.mp4",)))
    assert "cup.mp4" not in _paths(kept)
    if mode == "keyword":
        assert kept.hits == []
    only = engine.search(SearchRequest("a hand holds a box labelled PS-2", k=5, mode=mode,
                                       where=("name in box.mp4,campus_01.mp4",)))
    assert _paths(only) and set(_paths(only)) <= {"box.mp4", "campus_01.mp4"} and _paths(only)[0] == "box.mp4"
    none = engine.search(SearchRequest("Kipchoge", k=5, mode=mode, where=("duration > 100000",)))
    assert none.hits == [] and none.empty_reason


# the paraphrased queries of the text-search tests (test_text_query, cli/test_search) and the clips they rank first
PARAPHRASES = [("a hand holding a cup", {"cup.mp4"}), ("the campus square", {f"campus_0{i}.mp4" for i in range(1, 5)}),
               ("somebody rides a bike", {"bikes.mp4"}), ("a hand turns a cup", {"cup.mp4"})]


@pytest.mark.parametrize(("text", "wanted"), PARAPHRASES, ids=[p[0] for p in PARAPHRASES])
def test_hybrid_ranks_paraphrases_at_least_as_well_as_vector(demo_index, text, wanted):
    engine = Engine(demo_index)

    def places(mode):  # where the wanted clips stand, best first
        return sorted(i for i, p in enumerate(_paths(engine.search(SearchRequest(text, k=9, mode=mode))), 1)
                      if p in wanted)

    by_vector, by_hybrid = places("vector"), places("hybrid")
    assert len(by_hybrid) == len(wanted) == len(by_vector)
    assert all(h <= v for h, v in zip(by_hybrid, by_vector, strict=True)), (by_hybrid, by_vector)


def test_the_default_is_hybrid_with_descriptions_else_vector(rare_index, example_index):
    assert Engine(rare_index).search(SearchRequest("Kipchoge")).as_dict()["mode"] == "hybrid"
    assert Engine(rare_index).search(SearchRequest("a square", concept="location")).as_dict()["mode"] == "vector"
    with Catalog(example_index / "catalog.duckdb", read_only=True) as catalog:
        assert hybrid.chosen_mode(None, None, catalog) == "vector"  # paths alone are no descriptions
    with pytest.raises(SignalError, match="--mode must be one of vector, keyword, hybrid"):
        SearchRequest("x", mode="fuzzy")
    with pytest.raises(SignalError, match="--mode keyword and --concept do not go together"):
        Engine(rare_index).search(SearchRequest("x", concept="location", mode="keyword"))


@pytest.fixture
def scratch(rare_index, tmp_path):
    from tests.indexes import copied_index

    return copied_index(rare_index.parent, tmp_path / "videos") / ".convis"


def _saved_is_current(index_dir) -> bool:
    with Catalog(index_dir / "catalog.duckdb", read_only=True) as catalog:
        return KeywordIndex.load(index_dir).stamp == stamp(catalog)


def test_removal_and_restore_keep_the_keyword_index_in_step(scratch):
    engine = Engine(scratch)
    assert _saved_is_current(scratch)  # the index run built it
    engine.remove(["cup.mp4"])
    assert _saved_is_current(scratch)
    gone = engine.search(SearchRequest("Kipchoge", mode="keyword"))
    assert gone.hits == [] and not gone.notices  # the saved index was current: nothing rebuilt
    engine.unremove(["cup.mp4"])
    assert _saved_is_current(scratch) and _paths(engine.search(SearchRequest("Kipchoge", mode="keyword"))) == \
        ["cup.mp4"]


def test_an_index_run_that_changes_a_caption_keeps_the_keyword_index_in_step(scratch, tmp_path):
    from retrieval.pipeline.settings import IndexSettings

    captions = tmp_path / "captions"
    shutil.copytree(CAPTIONS, captions)
    (captions / "box.txt").write_text("A hand holds a box signed by Eliud.\n")
    Engine(scratch).index(scratch.parent, [], IndexSettings(workers=1, captions=captions))
    assert _saved_is_current(scratch)
    found = Engine(scratch).search(SearchRequest("Eliud", mode="keyword"))
    assert _paths(found) == ["box.mp4"] and not found.notices


@pytest.mark.parametrize("damage", ["missing", "stale", "garbled"])
def test_a_missing_stale_or_damaged_keyword_index_is_rebuilt_with_a_notice(scratch, damage):
    folder = scratch / KEYWORD_DIR
    if damage == "missing":
        shutil.rmtree(folder)
    elif damage == "stale":  # built from texts the catalog no longer holds (a run stopped before it was saved)
        state = json.loads((folder / "state.json").read_text())
        (folder / "state.json").write_text(json.dumps({**state, "digest": "0"}))
    else:
        (folder / "state.json").write_text("{not json")
    result = Engine(scratch).search(SearchRequest("Kipchoge", mode="keyword"))
    assert _paths(result) == ["cup.mp4"]
    assert [n for n in result.notices if n.startswith("keyword index")] and _saved_is_current(scratch)


def test_cli_table_and_json_show_both_ranks_and_the_matched_terms(rare_index):
    runner = CliRunner()
    shown = runner.invoke(app, ["search", "F-16 bicycles", "--index-dir", str(rare_index), "-k", "3"],
                          env={"COLUMNS": "200"})
    assert shown.exit_code == 0, shown.output
    assert "kw rank" in shown.stdout and "vec rank" in shown.stdout and "f-16" in shown.stdout
    assert "v + 0.45 c (1 - v)" in shown.stdout
    found = json.loads(runner.invoke(app, ["search", "F-16", "--mode", "keyword", "--index-dir", str(rare_index),
                                           "--json"]).stdout)
    assert found["mode"] == "keyword" and found["hits"][0]["path"] == "bikes.mp4"
    assert {k: found["hits"][0][k] for k in ("keyword_rank", "vector_rank")} == {"keyword_rank": 1,
                                                                                 "vector_rank": None}
    assert found["hits"][0]["matched_terms"] == ["f-16", "f", "16"]
    bad = runner.invoke(app, ["search", "x", "--mode", "fuzzy", "--index-dir", str(rare_index)])
    assert bad.exit_code == 2 and len(bad.stderr.strip().splitlines()) == 1


def test_search_help_states_the_modes_their_default_and_k():
    text = " ".join(CliRunner().invoke(app, ["search", "--help"], env={"COLUMNS": "200"}).stdout.split())
    assert "vector|keyword|hybrid" in text and "v + 0.45 c (1 - v)" in text
    assert "by default hybrid when the index holds" in text


def test_the_api_search_takes_a_mode(rare_index):
    from fastapi.testclient import TestClient

    from retrieval.serve.server import create_app

    with TestClient(create_app(rare_index), base_url="http://localhost") as client:
        found = client.get("/search", params={"text": "Kipchoge", "mode": "keyword"})
        refused = client.get("/search", params={"text": "Kipchoge", "mode": "fuzzy"})
    assert found.status_code == 200 and found.json()["mode"] == "keyword", found.text
    assert [h["path"] for h in found.json()["hits"]] == ["cup.mp4"] and found.json()["hits"][0]["keyword_rank"] == 1
    assert refused.status_code == 422
