"""Ranking candidates by how much they differ from a reference, statement files, and --most-different queries."""

from __future__ import annotations

import json

import pytest

from rerankers.base import LetterOdds
from rerankers.prompts.diff import DiffInputError
from retrieval.engine import Engine
from retrieval.search.diff import gather_statements, read_statements
from tests.retrieval.lmm.test_differences import BIKES, BOX, CUP, ScriptedLMM


@pytest.fixture
def engine(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))  # a private answer cache
    return Engine(None)


def test_candidates_rank_by_how_surely_they_differ_and_the_reference_itself_last(engine, example_videos):
    # per candidate: two statements; cup is told apart surely, box barely
    lmm = ScriptedLMM([LetterOdds(0.5, 0.4, "a"), LetterOdds(0.4, 0.5, "b"),  # box: 0.556, 0.444
                       LetterOdds(0.9, 0.1, "a"), LetterOdds(0.05, 0.95, "b")])  # cup: 0.9, 0.05
    ranking = engine.diff_rank(example_videos / BIKES, [example_videos / BOX, example_videos / CUP,
                                                        example_videos / BIKES], "riding",
                               {"0": "faster", "1": "taller"}, reranker=lmm)
    assert [c.path.split("/")[-1] for c in ranking.candidates] == [CUP, BOX, BIKES]
    assert [c.rank for c in ranking.candidates] == [1, 2, 3]
    assert ranking.candidates[0].differences == pytest.approx(0.8 + 0.9)
    assert ranking.candidates[1].differences == pytest.approx(2 * abs(2 * 0.5 / 0.9 - 1))
    assert ranking.candidates[2].result is None and ranking.model_calls == 4
    assert any("same video as the reference" in n for n in ranking.notices)


# --------------------------------------------------------------------------- statements


def test_statements_from_options_and_a_text_file_are_numbered_in_order(tmp_path):
    path = tmp_path / "s.txt"
    path.write_text("# squat\nwider stance\n\n  deeper squat  \n", encoding="utf-8")
    assert gather_statements(["faster"], str(path)) == {"0": "faster", "1": "wider stance", "2": "deeper squat"}


def test_viddiffs_annotated_differences_keep_their_keys_and_skip_nulls(tmp_path):
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"3": {"description": "wider stance", "name": "x"}, "5": None, "8": "deeper"}))
    assert gather_statements([], str(path)) == {"3": "wider stance", "8": "deeper"}
    listed = tmp_path / "l.json"
    listed.write_text(json.dumps(["a", "b"]))
    assert read_statements(str(listed)) == [(None, "a"), (None, "b")]


@pytest.mark.parametrize("content, message", [
    (b"", "holds no difference statements"), (b"# only a comment\n\n", "holds no difference statements"),
    (b"\xff\xfe\x00bad", "is not UTF-8 text"), (b"{not json", "is not valid JSON"),
    (b'[1, 2]', "a statement is not text"), (b"x" * 600, "a difference statement has 600 characters")])
def test_a_bad_statements_file_is_one_clear_line(tmp_path, content, message):
    path = tmp_path / "s.txt"
    path.write_bytes(content)
    with pytest.raises(DiffInputError, match=message) as err:
        gather_statements([], str(path))
    assert "\n" not in str(err.value)


def test_no_statements_and_a_key_given_twice_are_errors(tmp_path):
    with pytest.raises(DiffInputError, match="no difference statements"):
        gather_statements([], None)
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"0": "deeper"}))
    with pytest.raises(DiffInputError, match="given twice"):
        gather_statements(["faster"], str(path))


# --------------------------------------------------------------------------- --most-different


def test_most_different_ranks_the_same_scores_ascending_and_recalls_the_farthest(example_index, example_videos):
    engine = Engine(example_index)
    anchor = example_videos / "campus_01.mp4"
    every = engine.query(anchor, ["location", "main-action"], k=100, recall_k=100)
    least = engine.query(anchor, ["location", "main-action"], k=3, recall_k=3, most_different=True)
    totals = sorted(h.total for h in every.hits)
    assert [h.total for h in least.hits] == pytest.approx(totals[:3])  # recalled from only 3 a signal: the farthest
    assert [h.rank for h in least.hits] == [1, 2, 3] and least.most_different
    assert least.as_dict()["order"] == "most different first"
    by_unit = {(h.path, h.start): h.total for h in every.hits}
    assert all(by_unit[(h.path, h.start)] == pytest.approx(h.total) for h in least.hits)  # the same scores


def test_most_different_with_a_change_is_refused(example_index, example_videos):
    from retrieval.search.signals import SignalError

    with pytest.raises(SignalError, match="most-different"):
        Engine(example_index).query(example_videos / "campus_01.mp4", ["location"], change="at night",
                                    most_different=True)
