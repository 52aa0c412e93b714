"""Differences between clips through the engine: closed and open mode, both orders, the answer cache, fixed-rate
frames, ranking candidates, statement files and bad input."""

from __future__ import annotations

import json
import math
import os

import av
import pytest

from bench.tiny.vlm import build_qwen_vl
from rerankers.base import LetterOdds, Reranker
from rerankers.prompts.diff import DiffInputError
from retrieval.analysis.diff import gather_statements, read_statements
from retrieval.api import DiffRequest, Engine, QueryRequest

BIKES, BOX, CUP = "bikes.mp4", "box.mp4", "cup.mp4"


class ScriptedLMM(Reranker):
    """A reranker whose which-video answers and open answers are given in advance, in the order asked; it records
    every question (the real base class builds the clips, batches and reads the odds)."""

    name, source, revision = "scripted", "test", "1"
    frames_per_video = 4

    def __init__(self, odds=(), answers=()):
        self.odds, self.answers, self.asked, self.requests = list(odds), list(answers), [], []

    def _next_tokens(self, clips, concept_words):
        raise AssertionError("not a similarity question")

    def _letter_odds(self, clips, questions):
        self.asked.extend(questions)
        return [self.odds.pop(0) for _ in questions]

    def _generate_texts(self, clips, prompt, max_new_tokens):
        self.requests.append(prompt)
        return [self.answers.pop(0) for _ in clips]


@pytest.fixture(scope="module")
def qwen(tmp_path_factory):
    return str(build_qwen_vl(tmp_path_factory.mktemp("vlm") / "qwen2-vl-tiny"))


@pytest.fixture
def engine(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))  # a private answer cache
    return Engine(None)


def test_closed_mode_asks_each_statement_once_and_reads_p_a(engine, example_videos):
    lmm = ScriptedLMM([LetterOdds(0.06, 0.02, "a"), LetterOdds(0.01, 0.03, "b")])
    result = engine.diff(DiffRequest(example_videos / BIKES, example_videos / BOX, action="riding",
                                     statements={"0": "faster", "7": "more people"},
                                     reranker=lmm))
    assert [v.p_a for v in result.verdicts] == pytest.approx([0.75, 0.25])
    assert result.predictions() == {"0": "a", "7": "b"}  # VidDiff's format, the given keys
    assert result.model_calls == 2 and len(lmm.asked) == 2
    assert "faster" in lmm.asked[0] and "more people" in lmm.asked[1]
    assert result.differences == pytest.approx(0.5 + 0.5)


def test_symmetric_asks_both_orders_and_averages_p_a(engine, example_videos):
    forward = [LetterOdds(0.6, 0.2, "a"), LetterOdds(0.1, 0.3, "b")]
    backward = [LetterOdds(0.2, 0.6, "b"), LetterOdds(0.5, 0.5, "a")]  # P(first) with the clips swapped
    lmm = ScriptedLMM(forward + backward)
    result = engine.diff(DiffRequest(example_videos / BIKES, example_videos / BOX, action="riding",
                                     statements={"0": "faster", "1": "taller"},
                                     reranker=lmm, symmetric=True))
    # (a, b)'s P(a) and 1 - P(first) of (b, a), averaged
    assert [v.p_a for v in result.verdicts] == pytest.approx([(0.75 + 0.75) / 2, (0.25 + 0.5) / 2])
    assert result.model_calls == 4  # two a statement
    assert [len(v.answers) for v in result.verdicts] == [2, 2]


def test_greedy_letters_that_disagree_across_orders_are_undecided(engine, example_videos):
    lmm = ScriptedLMM([LetterOdds(0.5, 0.1, "a"), LetterOdds(0.5, 0.1, "a")])  # "a" both times: a, then b
    result = engine.diff(DiffRequest(example_videos / BIKES, example_videos / BOX, action="riding",
                                     statements={"0": "faster"}, reranker=lmm,
                                     mode="greedy", symmetric=True))
    (verdict,) = result.verdicts
    assert verdict.p_a == 0.5 and verdict.prediction is None and result.predictions() == {}
    assert verdict.to_dict()["prediction"] is None


def test_asking_again_is_answered_from_the_cache(tmp_path, example_videos, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    statements = {"0": "faster", "1": "taller"}
    first = Engine(None).diff(DiffRequest(example_videos / BIKES, example_videos / BOX, action="riding",
                                          statements=statements, reranker=ScriptedLMM(
        [LetterOdds(0.6, 0.2, "a"), LetterOdds(0.1, 0.3, "b")])))
    again = ScriptedLMM()  # would fail if asked
    second = Engine(None).diff(DiffRequest(example_videos / BIKES, example_videos / BOX, action="riding",
                                           statements=statements, reranker=again))
    assert second.model_calls == 0 and again.asked == []
    assert [v.p_a for v in second.verdicts] == [v.p_a for v in first.verdicts]
    other = ScriptedLMM([LetterOdds(0.3, 0.3, "a")])
    third = Engine(None).diff(DiffRequest(example_videos / BIKES, example_videos / BOX, action="running",
                                          statements={"0": "faster"},
                                          reranker=other))
    assert third.model_calls == 1  # another action is another question


def test_open_mode_reads_the_proposals_and_rescores_each_in_closed_mode(engine, example_videos):
    answer = json.dumps({"0": {"description": "the rider is faster", "prediction": "b"},
                         "1": {"description": "more people", "prediction": "a"}, "2": {"prediction": "a"}})
    lmm = ScriptedLMM([LetterOdds(0.1, 0.3, "b"), LetterOdds(0.2, 0.2, "a")], [answer])
    result = engine.diff(DiffRequest(example_videos / BIKES, example_videos / BOX, action="riding", most=3,
                                     reranker=lmm))
    assert "Suggest no more than 3 differences." in lmm.requests[0]
    assert [(p.description, p.proposed, p.verdict.p_a) for p in result.proposals] == [
        ("the rider is faster", "b", pytest.approx(0.25)), ("more people", "a", pytest.approx(0.5))]
    assert result.problems == ('difference 2 has no description: {"prediction": "a"}',)
    assert result.model_calls == 3  # one proposal, two re-scores
    # VidDiff's open format: the letter the LMM proposed (the one VidDiff scores), not the re-score's
    assert result.predictions() == {"0": {"description": "the rider is faster", "prediction": "b"},
                                    "1": {"description": "more people", "prediction": "a"}}
    assert result.proposals[1].verdict.prediction is None  # re-scored 0.5: undecided, yet the proposal stands
    assert result.to_dict()["unreadable"] == list(result.problems)


def test_an_unreadable_open_answer_is_reported_with_no_items(engine, example_videos):
    lmm = ScriptedLMM([], ["I see two videos."])
    result = engine.diff(DiffRequest(example_videos / BIKES, example_videos / BOX, action="riding", most=2,
                                     reranker=lmm))
    assert result.proposals == () and result.model_calls == 1
    assert result.problems == ("no difference could be read from the answer: I see two videos.",)


def _native_fps(path) -> float:
    with av.open(str(path)) as container:
        return float(container.streams.video[0].average_rate)


def _stride_frames(path, rate: float, most: int) -> list[int]:
    """VidDiff's ``video[::int(fps / rate)]`` on the file's frames, with the stride grown past ``most``."""
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        fps, count = float(stream.average_rate), sum(1 for _ in container.decode(stream))
    stride = max(1, int(fps / rate))
    stride = stride if count <= stride * most else math.ceil(count / most)
    return list(range(0, count, stride))


@pytest.mark.parametrize("rate", [2.0, 5.0, 100.0])
def test_fps_samples_each_clip_at_a_fixed_rate_and_says_so_in_the_question(engine, example_videos, rate):
    lmm = ScriptedLMM([LetterOdds(0.2, 0.1, "a")])
    result = engine.diff(DiffRequest(example_videos / BIKES, example_videos / CUP, action="riding",
                                     statements={"0": "faster"}, reranker=lmm,
                                     fps=rate))
    seen = result.seen.to_dict()
    for key, name in (("a", BIKES), ("b", CUP)):
        assert seen[key]["indices"] == _stride_frames(example_videos / name, rate, 75)
    n_a, n_b = seen["frames_in_prompt"]
    assert (n_a, n_b) == (len(seen["a"]["indices"]), len(seen["b"]["indices"]))
    assert f"The first {n_a} frames are video a. The last {n_b} frames are video b." in lmm.asked[0]
    assert result.frames == f"rate@{rate:g}:75"
    # the rate stated is VidDiff's int(fps / stride), or the file's own when lower than asked
    said = []
    for name in (BIKES, CUP):
        picked = _stride_frames(example_videos / name, rate, 75)
        sampled = _native_fps(example_videos / name) / (picked[1] - picked[0])
        said.append(int(sampled + 1e-6) if sampled >= rate else round(sampled, 2))
    line = (f"The frame rate is the same and is {said[0]:g}." if said[0] == said[1] else
            f"The frame rate of video a is {said[0]:g} and of video b is {said[1]:g}.")
    assert line in lmm.asked[0]


def test_the_familys_own_frames_without_fps(engine, example_videos, qwen):
    result = engine.diff(DiffRequest(example_videos / BIKES, example_videos / BOX, action="riding",
                                     statements={"0": "faster"}, reranker=qwen))
    assert result.frames == "per-second:8" and result.seen.to_dict()["frames_in_prompt"] == [8, 8]
    assert 0.0 <= result.verdicts[0].p_a <= 1.0 and result.model_calls == 1
    assert result.model.startswith("qwen2-vl:")


def test_two_identical_files_are_refused_in_one_line(engine, example_videos, tmp_path):
    copy = tmp_path / "same.mp4"
    copy.write_bytes((example_videos / BIKES).read_bytes())
    with pytest.raises(DiffInputError, match="same video") as err:
        engine.diff(DiffRequest(example_videos / BIKES, copy, action="riding", statements={"0": "faster"},
                                reranker=ScriptedLMM()))
    assert "\n" not in str(err.value)


def test_candidates_rank_by_how_surely_they_differ_and_the_reference_itself_last(engine, example_videos):
    # per candidate: two statements; cup is told apart surely, box barely
    lmm = ScriptedLMM([LetterOdds(0.5, 0.4, "a"), LetterOdds(0.4, 0.5, "b"),  # box: 0.556, 0.444
                       LetterOdds(0.9, 0.1, "a"), LetterOdds(0.05, 0.95, "b")])  # cup: 0.9, 0.05
    events = []
    ranking = engine.diff(DiffRequest(example_videos / BIKES, candidates=[example_videos / BOX, example_videos / CUP,
                                                        example_videos / BIKES], action="riding",
                                      statements={"0": "faster", "1": "taller"}, reranker=lmm),
                          progress=lambda event, data: events.append((event, data)))
    assert events == [("candidate", {"done": i, "total": 3}) for i in (1, 2, 3)]
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
    every = engine.query(QueryRequest(anchor, ["location", "main-action"], k=100, recall_k=100))
    least = engine.query(QueryRequest(anchor, ["location", "main-action"], k=3, recall_k=3, most_different=True))
    totals = sorted(h.total for h in every.hits)
    assert [h.total for h in least.hits] == pytest.approx(totals[:3])  # recalled from only 3 a signal: the farthest
    assert [h.rank for h in least.hits] == [1, 2, 3] and least.most_different
    assert least.as_dict()["order"] == "most different first"
    by_unit = {(h.path, h.start): h.total for h in every.hits}
    assert all(by_unit[(h.path, h.start)] == pytest.approx(h.total) for h in least.hits)  # the same scores


def test_most_different_with_a_change_is_refused(example_index, example_videos):
    from retrieval.search.signals import SignalError

    with pytest.raises(SignalError, match="most-different"):
        Engine(example_index).query(QueryRequest(example_videos / "campus_01.mp4", ["location"], change="at night",
                                                 most_different=True))


def test_an_overflowed_answer_is_unreadable_in_both_modes_and_asked_again(tmp_path, example_videos, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    for mode in ("expected", "greedy"):
        nan = LetterOdds(float("nan"), float("nan"), "a", finite=False)
        first = Engine(None).diff(DiffRequest(example_videos / BIKES, example_videos / BOX, action="riding",
                                              statements={"0": "faster"},
                                              reranker=ScriptedLMM([nan]), mode=mode))
        assert first.verdicts[0].p_a is None and first.verdicts[0].answers[0].raw == "non-finite logits"
        again = ScriptedLMM([LetterOdds(0.3, 0.1, "a")])
        second = Engine(None).diff(DiffRequest(example_videos / BIKES, example_videos / BOX, action="riding",
                                               statements={"0": "faster"},
                                               reranker=again, mode=mode))
        assert second.model_calls == 1 and second.verdicts[0].p_a == pytest.approx(0.75 if mode == "expected" else 1)


def test_a_proposal_too_long_to_ask_is_reported_and_the_others_rescored(engine, example_videos):
    answer = json.dumps({"0": {"description": "x" * 600, "prediction": "a"},
                         "1": {"description": "faster", "prediction": "b"}})
    lmm = ScriptedLMM([LetterOdds(0.1, 0.3, "b")], [answer])
    result = engine.diff(DiffRequest(example_videos / BIKES, example_videos / BOX, action="riding", most=3,
                                     reranker=lmm))
    assert [p.description for p in result.proposals] == ["faster"]
    assert result.problems[0].startswith("difference 0 is longer than 500 characters")


@pytest.mark.parametrize("action", ["", "x" * 10_000])
def test_a_bad_action_is_said_before_any_model_is_built(engine, example_videos, action):
    with pytest.raises(DiffInputError, match="action description"):
        engine.diff(DiffRequest(example_videos / BIKES, example_videos / BOX, action=action, statements={"0": "faster"},
                                reranker="/nowhere/no-such-model"))
    with pytest.raises(DiffInputError, match="action description"):
        engine.diff(DiffRequest(example_videos / BIKES, candidates=[example_videos / BOX], action=action,
                                statements={"0": "faster"},
                                reranker="/nowhere/no-such-model"))


def test_a_statements_pipe_device_or_half_surrogate_is_one_line(tmp_path):
    os.mkfifo(tmp_path / "pipe.txt")  # no writer: reading it would wait for ever
    (tmp_path / "zero.txt").symlink_to("/dev/zero")
    (tmp_path / "half.json").write_text('["the left arm is higher", "\\ud800 bent"]')
    for name, says in (("pipe.txt", "it is a pipe, not a file"), ("zero.txt", "it is a device, not a file"),
                       ("half.json", "half a surrogate pair")):
        with pytest.raises(DiffInputError, match=says):
            gather_statements([], str(tmp_path / name))
