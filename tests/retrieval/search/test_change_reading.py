"""A change read against the concepts: what it replaces, which concepts leave the stay term, the anchor's texts
edited by the rule; and the composed-query set on the example clips (tests/data/compose)."""

import csv
import json

import numpy as np
import pytest
from typer.testing import CliRunner

from bench.covr.metrics import covr_metrics, read_annotations
from bench.covr.run import CovrRun, run_covr
from retrieval.api import Engine, QueryRequest
from retrieval.cli.app import app
from retrieval.search.change_reading import TOUCH_FLOOR, edit, phrases, read_change, sides
from tests.indexes import CAPTIONS, indexed_copies
from tests.paths import DATA

SET = DATA / "compose" / "changes.csv"
ROWS = list(csv.DictReader(SET.open()))
CLIPS = ("bigbuckbunny.mp4", "bikes.mp4", "box.mp4", "campus_01.mp4", "campus_02.mp4", "campus_03.mp4",
         "campus_04.mp4", "carphone_pristine.mp4", "cup.mp4")


@pytest.mark.parametrize("text, new, old", [
    ("a cup instead of a box", "a cup", "a box"),
    ("A cup rather than a box.", "A cup", "a box"),
    ("instead of a box, a cup", "a cup", "a box"),
    ("replace the man in a car with a rabbit", "a rabbit", "the man in a car"),
    ("swap the cup for a cardboard box", "a cardboard box", "the cup"),
    ("a cup", "a cup", None),
])
def test_a_change_is_split_into_its_new_and_replaced_sides(text, new, old):
    split = sides(text)
    assert (split.new, split.old) == (new, old)


def test_a_side_is_cut_before_its_prepositions_so_one_phrase_names_one_thing():
    assert phrases("a cartoon animal in a meadow") == ["a cartoon animal", "in a meadow"]
    assert phrases("people ride bicycles") == ["people ride bicycles"]


@pytest.mark.parametrize("text, change, expected", [
    ("A hand holds a cardboard box in front of the camera.", "a cup instead of a cardboard box",
     "A hand holds a cup in front of the camera."),
    ("A hand holds a cup.", "swap the cup for a cardboard box", "A hand holds a cardboard box."),
    ("People walk across the square.", "people ride bicycles instead of walking",  # "walking" found as "walk"
     "People people ride bicycles across the square."),
    # the whole replaced side is not in the text: each phrase is swapped for its counterpart
    ("A man sits inside a moving car.", "a cartoon animal in a meadow instead of a man in a car",
     "A cartoon animal sits inside a moving meadow."),
    ("A hand holds a cup.", "a rabbit instead of a man", None),  # not in the text: left unedited
    ("A hand holds a cup.", "a rabbit", None),  # nothing replaced: nothing to edit
])
def test_the_rule_puts_the_new_side_where_the_replaced_words_stand(text, change, expected):
    assert edit(text, change) == expected


AXES = {"thing": [1.0, 0.0, 0.0], "place": [0.0, 1.0, 0.0], "act": [0.0, 0.0, 1.0]}


def _embed(texts):
    """Each text along the axis of the keyword it holds (a phrase with none sits between all three)."""
    out = []
    for text in texts:
        v = next((np.array(a) for word, a in AXES.items() if word in text), np.ones(3))
        out.append(v / np.linalg.norm(v))
    return np.array(out)


CONCEPTS = {"main-objects": "thing", "location": "place", "main-action": "act"}


def _read(change, chosen=False, texts=None):
    from retrieval.search import change_reading

    probes = dict(change_reading.DEFINITIONS)
    change_reading.DEFINITIONS.update(CONCEPTS)  # the fake embedding reads the keyword
    try:
        return read_change(change, {k: k for k in CONCEPTS}, chosen, _embed, texts or {})
    finally:
        change_reading.DEFINITIONS.clear()
        change_reading.DEFINITIONS.update(probes)


def test_each_phrase_touches_its_closest_concept_and_the_touched_ones_leave_the_stay_term():
    reading = _read("a place instead of a thing")
    assert {(t.phrase, t.concept) for t in reading.touches} == {("a place", "location"), ("a thing", "main-objects")}
    assert all(t.similarity == pytest.approx(1.0) for t in reading.touches)  # (cos + 1) / 2 of equal vectors
    assert reading.left == ("main-objects", "location") and reading.stay == ("main-action",)
    assert "left out of stay; stay = main-action" in reading.footnote()


def test_a_phrase_below_the_floor_touches_nothing_and_named_concepts_all_stay():
    # a phrase without a keyword sits at cos 1/sqrt(3) of every axis: (1 + 0.577) / 2 = 0.789 >= the floor
    assert (1 + 1 / np.sqrt(3)) / 2 >= TOUCH_FLOOR
    named = _read("a place instead of a thing", chosen=True)
    assert named.left == () and named.stay == tuple(CONCEPTS) and "-c all stay" in named.footnote()
    every = _read("a thing in a place while they act")
    assert every.left == () and "every concept, so all stay" in every.footnote()


def test_the_anchor_texts_are_edited_where_they_hold_the_replaced_words():
    reading = _read("a cup instead of a box", texts={"caption": "A hand turns a box.", "location": "A plain wall."})
    assert reading.edited == {"caption": "A hand turns a cup."} and reading.unedited == ("location",)


@pytest.fixture(scope="module")
def example_set(tmp_path_factory):
    """The nine example clips indexed with EfficientNet-Lite0 and the text indexer (their captions and
    descriptions), the set's CSV beside them (a TF-CoVR-shaped folder)."""
    folder = indexed_copies(tmp_path_factory.mktemp("compose-set"), CLIPS, ["efficientnet-lite0", "text"],
                            captions=CAPTIONS)
    (folder / "changes.csv").write_text(SET.read_text())
    return folder


def _rank(engine, folder, row) -> int:
    hits = engine.query(QueryRequest(folder / row["query_video"], (), k=10, change=row["modification"])).hits
    return [h.path for h in hits].index(row["target_video"]) + 1


@pytest.mark.parametrize("row", ROWS, ids=[r["query_id"] for r in ROWS])
def test_the_intended_clip_is_first_where_a_replaced_concept_was_the_cause_and_no_case_ranks_it_lower(
        example_set, row):
    rank = _rank(Engine(example_set / ".convis"), example_set, row)
    assert rank <= int(row["rank_before"])
    if row["cause"] != "kept":  # "replaced" was second before: the old subject and objects counted in stay
        assert rank == 1


def test_json_says_which_concepts_the_change_touched_and_why_and_the_table_says_it_in_one_line(example_set,
                                                                                               tmp_path):
    change = ["--anchor", str(example_set / "carphone_pristine.mp4"), "--change",
              "a cartoon animal in a meadow instead of a man in a car", "--index-dir", str(example_set / ".convis")]
    result = CliRunner().invoke(app, ["query", *change, "--json"])
    assert result.exit_code == 0, result.output
    said = json.loads(result.stdout)["change"]
    touched = {t["phrase"]: t for t in said["touched"]}
    assert touched["in a meadow"]["concept"] == "location" and touched["in a meadow"]["similarity"] >= TOUCH_FLOOR
    assert touched["a cartoon animal"]["concept"] == "main-subjects"
    assert set(said["left"]) == {"main-subjects", "location"} and "location" not in said["stay"]
    assert said["edited"]["caption"].startswith("A cartoon animal sits inside a moving meadow")
    table = CliRunner().invoke(app, ["query", *change])
    assert "the change touched main-subjects ('a cartoon animal'" in " ".join(table.output.split())
    page = tmp_path / "gallery.html"
    assert CliRunner().invoke(app, ["query", *change, "--html", str(page)]).exit_code == 0
    assert "the change touched main-subjects" in page.read_text()
    named = json.loads(CliRunner().invoke(app, ["query", *change, "-c", "location", "--json"]).stdout)["change"]
    assert named["stay"] == ["location"] and named["left"] == [] and named["concepts_named"]


def test_the_tfcovr_metric_on_the_set_ranks_every_intended_clip_first(example_set, tmp_path):
    metrics = run_covr(CovrRun(example_set, example_set / ".convis"))
    ranking = json.loads((example_set / ".convis" / "ranking.json").read_text())
    assert {q: r[0] for q, r in ranking.items()} == {row["query_id"]: row["target_video"].removesuffix(".mp4")
                                                    for row in ROWS}
    assert {k: v for k, v in metrics.items() if k != "ranking"} == covr_metrics(
        read_annotations(example_set / "changes.csv"), ranking)


def test_the_anchor_texts_are_read_for_its_own_units_only(example_set):
    from retrieval.core.signal_kinds import CAPTION
    from retrieval.store.catalog import Catalog

    with Catalog(Engine(example_set / ".convis").catalog_path, read_only=True) as catalog:
        ids = catalog.unit_ids("cup.mp4")
        every = catalog.chosen_texts(CAPTION)
        assert catalog.chosen_texts(CAPTION, units=ids) == {u: every[u] for u in ids} != every
        assert catalog.chosen_texts(CAPTION, units=[]) == {}
