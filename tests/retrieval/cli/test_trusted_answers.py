"""Answers a person can trust at a glance: each concept names what scored it and says when others would rank the
same, one confidence vocabulary in every mode, short answers that say why, dupes that drop nothing unasked, tables
with one header a column, and plain `ls`, `info` and `compare`."""

import json
import shutil

import pytest
from typer.testing import CliRunner

from retrieval.cli.app import app
from retrieval.core.concepts import CONVIS_CONCEPTS
from retrieval.search.confidence import WORDS
from tests.paths import EXAMPLES

runner = CliRunner()
CAPTIONS = EXAMPLES.parent / "captions"


def convis(*args, columns: str = "120"):
    return runner.invoke(app, list(map(str, args)), env={"COLUMNS": columns})


def as_json(*args) -> dict:
    ran = convis(*args, "--json")
    assert ran.exit_code == 0, ran.output
    return json.loads(ran.stdout)


def test_a_single_concept_says_which_other_concepts_would_rank_the_same_and_its_header_names_its_signal(
        example_index):
    # indexed without captions: every concept is scored by the one visual signal
    ran = convis("query", "--anchor", EXAMPLES / "box.mp4", "-c", "location", "--index-dir", example_index, "-k", 3)
    assert ran.exit_code == 0, ran.output
    said = " ".join(ran.stderr.split())
    assert ("location, main-action, main-subjects, main-objects and order-of-actions would rank the same here: all "
            "are scored by the whole-clip similarity of efficientnet-lite0") in said
    assert "location (efficientnet-lite0)" in ran.stdout.split("┡")[0]  # the column says what scored it


def test_compare_defaults_to_the_five_concepts_and_says_what_a_generic_signal_means(example_index):
    found = as_json("compare", EXAMPLES / "box.mp4", EXAMPLES / "cup.mp4", "--index-dir", example_index)
    assert [c["key"] for c in found["concepts"]] == list(CONVIS_CONCEPTS)
    assert any(n.startswith("main-objects here means the whole-clip similarity of efficientnet-lite0: it compares "
                            "the whole clips, not their main objects alone") for n in found["notices"])
    assert found["confidence"] in WORDS


def test_every_example_clip_describes_all_five_concepts_in_words_of_its_own():
    for clip in sorted(EXAMPLES.glob("*.mp4")):
        texts = {c: (CAPTIONS / f"{clip.stem}.{c}.txt").read_text().strip() for c in CONVIS_CONCEPTS}
        assert all(texts.values()) and len(set(texts.values())) == len(texts), clip.name
        assert (CAPTIONS / f"{clip.stem}.txt").read_text().strip() not in texts.values()


def test_the_demo_ranks_differently_by_two_concepts(demo_index):
    ranked = {c: [h["path"] for h in as_json("query", "--anchor", EXAMPLES / "box.mp4", "-c", c, "--index-dir",
                                             demo_index, "-k", 8)["hits"]] for c in ("location", "main-objects")}
    assert ranked["location"] != ranked["main-objects"]
    subjects = as_json("query", "--anchor", EXAMPLES / "bikes.mp4", "-c", "main-subjects", "--index-dir", demo_index)
    objects = as_json("query", "--anchor", EXAMPLES / "bikes.mp4", "-c", "main-objects", "--index-dir", demo_index)
    assert [h["scores"]["main-subjects"] for h in subjects["hits"]] != \
        [h["scores"]["main-objects"] for h in objects["hits"]]


def test_every_mode_speaks_one_confidence_vocabulary(demo_index):
    answers = [as_json("query", "--anchor", EXAMPLES / "box.mp4", "-c", "location", "--index-dir", demo_index),
               as_json("query", "--anchor", EXAMPLES / "campus_01.mp4", "-c", "location", "--most-different",
                       "--index-dir", demo_index),
               as_json("query", "--anchor", EXAMPLES / "box.mp4", "--change", "a cup instead of a box",
                       "--index-dir", demo_index),
               *(as_json("search", "a hand holding a cup", "--mode", mode, "--index-dir", demo_index)
                 for mode in ("vector", "hybrid"))]
    for answer in answers:
        labels = {h.get("confidence") for h in answer["hits"]} - {None}
        assert labels and labels <= set(WORDS), labels
        assert answer["no_match"] == (answer["hits"][0].get("confidence") == "weak")


def test_a_change_nothing_shows_is_not_strong_and_says_so(demo_index):
    found = as_json("query", "--anchor", EXAMPLES / "box.mp4", "--change", "at night", "--index-dir", demo_index)
    assert "strong" not in {h.get("confidence") for h in found["hits"]}
    assert found["no_match"] and found["no_match_note"] == "no clip matches this well; closest shown"
    works = as_json("query", "--anchor", EXAMPLES / "box.mp4", "--change", "a cup instead of a box", "--index-dir",
                    demo_index)
    assert works["hits"][0]["path"] == "cup.mp4" and works["hits"][0]["confidence"] != "weak"


def test_a_filter_that_keeps_one_unit_says_it_is_why_in_the_singular(demo_index):
    ran = convis("query", "--anchor", EXAMPLES / "box.mp4", "-c", "location", "--where", "duration < 5",
                 "--index-dir", demo_index, "-k", 3)
    assert ran.exit_code == 0, ran.output
    assert "1 result, not 3: the filter (duration < 5) keeps only 1 unit besides the anchor" in \
        " ".join(ran.stderr.split())


def test_an_outside_copy_of_an_indexed_file_as_anchor_says_the_original_is_left_out(demo_index, example_videos,
                                                                                   tmp_path):
    copy = shutil.copy(EXAMPLES / "box.mp4", tmp_path / "mine.mp4")
    found = as_json("query", "--anchor", copy, "-c", "location", "--index-dir", demo_index)
    assert "box.mp4" not in [h["path"] for h in found["hits"]]
    assert any(n.startswith("the anchor has the same bytes as box.mp4 in the index") for n in found["notices"])
    own = as_json("query", "--anchor", example_videos / "box.mp4", "-c", "location", "--index-dir", demo_index)
    assert not any("same bytes" in n for n in own["notices"])


def test_dupes_by_a_semantic_signal_proposes_no_drop_list_unless_asked(demo_index):
    found = as_json("dupes", "--index-dir", demo_index)
    assert found["groups"] and found["semantic"] and found["drop"] == []
    assert "--drop" in found["drop_withheld"]
    asked = as_json("dupes", "--index-dir", demo_index, "--drop")
    assert len(asked["drop"]) == sum(len(g["members"]) - 1 for g in asked["groups"])
    text = convis("dupes", "--index-dir", demo_index).stdout
    members = [line.split() for line in text.splitlines() if line.startswith("  ")]
    assert members and all(m[0] == "alike" and "similarity" in m for m in members)
    assert "remove --from-file" not in text


@pytest.mark.parametrize("args", [("search", "--concept", "location", "the campus square"),
                                  ("query", "--anchor", EXAMPLES / "box.mp4", "-c", "main-action", "-c", "location")])
def test_no_table_repeats_a_header(demo_index, args):
    header = convis(*args, "--index-dir", demo_index, "-k", 3, columns="200").stdout.split("┡")[0]
    names = [cell.strip() for line in header.splitlines() if line.startswith("┃")
             for cell in line.strip("┃").split("┃") if cell.strip()]
    heads = [name.split()[0] for name in names]  # a column's name, before what scored it
    rows = [line for line in header.splitlines() if line.startswith("┃")]
    assert names and len(heads) == len(set(heads)) and len(rows) == 1, header  # one header line


def test_a_search_is_titled_by_its_text_and_one_shape_fits_any_query(demo_index):
    assert 'clips matching "a cup"' in convis("search", "a cup", "--index-dir", demo_index).stdout
    for args in (("-c", "location"), ("-c", "main-action", "-c", "location"), ("--change", "a cup instead of a box")):
        ran = convis("query", "--anchor", EXAMPLES / "box.mp4", *args, "--index-dir", demo_index, "-k", 3,
                     columns="80")
        assert "┃ rank" in ran.stdout, ran.stdout  # a table, whatever the concepts


def test_ls_shows_resolution_fps_codec_size_and_tags(demo_index):
    text = convis("ls", "--index-dir", demo_index, columns="200").stdout
    assert all(col in text.split("┡")[0] for col in ("resolution", "fps", "codec", "size", "tags"))
    assert "1280x720" in text and "h264" in text and " MB" in text


def test_info_in_a_pipe_keeps_each_line_whole(demo_index):
    text = convis("info", "--index-dir", demo_index, columns="40").stdout
    assert any(line.strip().startswith("text:") and line.rstrip().endswith("faiss Flat") for line in text.splitlines())


@pytest.mark.parametrize("command", ["index", "query"])
def test_help_is_short_and_ends_with_examples(command):
    text = convis(command, "--help", columns="100").stdout
    assert len(text.splitlines()) <= 80 and f"Examples:\n  convis {command} " in text
    if command == "query":  # an option's help is cut at a sentence's end, not at an abbreviation
        assert '"a cup instead of a box"' in " ".join(text.split("Options:")[1].split("Examples:")[0].split())


def test_a_removed_file_as_anchor_is_said_to_be_removed_not_new(tmp_path):
    from tests.indexes import indexed_copies

    videos = indexed_copies(tmp_path, ("cup.mp4", "campus_01.mp4", "campus_02.mp4", "box.mp4"),
                            ["efficientnet-lite0"], captions=CAPTIONS)
    assert convis("remove", "--index-dir", videos, videos / "box.mp4").exit_code == 0
    found = as_json("query", "--anchor", videos / "box.mp4", "-c", "location", "--index-dir", videos)
    said = " ".join(found["notices"])
    assert "the anchor is box.mp4, removed from the index (convis remove)" in said and "a new file" not in said
