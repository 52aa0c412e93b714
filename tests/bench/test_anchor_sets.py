"""Retrieval rows on different anchors stay apart, each with its own random choice; the paper's values only
where they are comparable; notes printed once; a file of another format given as --gt says what to run."""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from bench import paper
from bench.cli import app
from bench.evaluate import ALL_ANCHORS, PAPER_SPLIT, random_rows, retrieval_rows
from bench.loaders import ScoreFile, discover, load_gt_pairs, ranked_from_data
from bench.split import make_split
from retrieval.core.concepts import BENCH_KEYS
from tests.paths import CONVIS_BENCH

GT = CONVIS_BENCH / "gt_conditioned_similarities.json"
SCORES = CONVIS_BENCH / "computed_retrieval_scores"
LLAVA = "LLaVA-OneVision-Qwen2-7B"
LLAVA_LOCATION = SCORES / "Location" / LLAVA / f"{LLAVA}_Location_ranking.json"


def _run(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


def _flat(text: str) -> str:
    """Table notes wrap at the terminal width; compare them as one line."""
    return " ".join(text.split())


@pytest.fixture(scope="module")
def made_split() -> list[dict]:
    return make_split(load_gt_pairs(GT))


def _stand_in_paper_ranks() -> list[dict]:
    """The paper's anchors and candidates with made-up ranks (its own human ranks are not released)."""
    return [{"anchor": a, **{key: {c: i + 1 for i, c in enumerate(sorted(cands))} for key in BENCH_KEYS.values()}}
            for a, cands in paper.SPLIT.items()]


# ---------------------------------------------------------------- rows and random choice


def test_random_choice_is_averaged_over_the_anchors_and_candidates_each_model_scored(tmp_path):
    human = {"location": {"a": {"x": 1, "y": 2, "z": 2}, "b": {"x": 1, "y": 1}, "c": {"x": 1, "y": 2}},
             "main-action": {"a": {"x": 1, "y": 2}}}
    part, whole = tmp_path / "part.json", tmp_path / "whole.json"
    part.write_text(json.dumps({"a": {"x": 0.9, "y": 0.1}}))  # one anchor, two of its three candidates
    whole.write_text(json.dumps({a: {c: 0.5 for c in cands} for a, cands in human["location"].items()}))
    rows = retrieval_rows([ScoreFile(part, "part", "location"), ScoreFile(whole, "whole", "location")], human)
    by_model = {r.model: r for r in rows}
    assert by_model["whole"].anchor_set == ALL_ANCHORS
    assert by_model["part"].anchor_set.startswith("subset ")

    randoms = {(r.concept, r.anchor_set): r for r in random_rows(human, rows)}
    assert set(randoms) == {("location", ALL_ANCHORS), ("location", by_model["part"].anchor_set),
                            ("main-action", ALL_ANCHORS)}
    on_part = randoms[("location", by_model["part"].anchor_set)]
    # one pick among the 2 candidates the model saw, one of them relevant
    assert (on_part.scores.recall, on_part.scores.precision, on_part.scores.n, on_part.n_gt) == (50, 50, 1, 3)
    on_all = randoms[("location", ALL_ANCHORS)].scores
    assert on_all.n == 3 and on_all.recall == pytest.approx(100 * (1 / 3 + 1 / 2 + 1 / 2) / 3)


def test_on_the_papers_split_rows_carry_its_values(tmp_path):
    human = ranked_from_data(_stand_in_paper_ranks(), "stand-in")
    rows = retrieval_rows(discover([LLAVA_LOCATION], "_ranking.json"), human)
    [row] = rows
    assert row.anchor_set == ALL_ANCHORS and row.paper == paper.paper_retrieval(LLAVA, "location")
    randoms = {r.concept: r for r in random_rows(human, rows)}
    assert randoms["location"].paper == paper.paper_random("location")


def test_after_make_split_the_released_scores_are_on_the_paper_split_without_its_values(made_split):
    human = ranked_from_data(made_split, "make-split")
    rows = retrieval_rows(discover([LLAVA_LOCATION], "_ranking.json"), human)
    [row] = rows
    assert (row.anchor_set, row.paper, row.scores.n, row.n_gt) == (PAPER_SPLIT, None, 133, len(made_split))
    random = next(r for r in random_rows(human, rows) if r.concept == "location")
    assert (random.anchor_set, random.paper, random.scores.n) == (PAPER_SPLIT, None, 133)
    # each anchor's candidates are the paper's four, less those the made split does not rank
    seen = [len(set(human["location"][a]) & paper.SPLIT[a]) for a in paper.SPLIT]
    assert random.scores.recall == pytest.approx(100 * np.mean([1 / n for n in seen]))


def test_the_papers_split_is_the_released_one():
    released = json.loads((CONVIS_BENCH / "to_be_ranked.json").read_text())
    assert paper.SPLIT == {a: frozenset(c) for a, c in released.items()}
    assert paper.is_split(released) and not paper.is_split({a: c[:3] for a, c in released.items()})


# ---------------------------------------------------------------- the commands


def test_cli_retrieval_after_make_split_keeps_the_paper_split_apart(tmp_path, made_split):
    ranked = tmp_path / "ranked.json"
    ranked.write_text(json.dumps(made_split))
    table = _run("retrieval", "--gt", ranked, SCORES)
    assert table.exit_code == 0, table.output
    text = _flat(table.stdout)
    assert text.count("retrieval at 1 (x100), paper split only") == 4  # the four concepts the scores cover
    assert text.count("anchors = anchors scored") == 1
    ranked_candidates = sum(len(set(e["Location"]) & paper.SPLIT[e["anchor"]]) for e in made_split
                            if e["anchor"] in paper.SPLIT)
    assert (f"paper split = the 133 anchors of the paper's retrieval split (to_be_ranked.json), the ones the "
            f"scores share with the ground truth; it ranks {ranked_candidates} of their 532 candidates") in text
    assert "Table 4 is not shown" in text and "(84.2)" not in text

    data = _run("retrieval", "--gt", ranked, SCORES, "--json")
    rows = json.loads(data.stdout)["results"]
    randoms = {r["concept"]: r for r in rows if r["model"] == "random choice"}
    assert {r["anchor_set"] for r in rows if r["concept"] == "location"} == {PAPER_SPLIT}
    assert randoms["location"]["n"] == 133
    unscored = randoms["order-of-actions"]  # no released scores: chance on everything the split ranks
    assert (unscored["anchor_set"], unscored["n"]) == (ALL_ANCHORS, len(made_split))
    assert all(r["paper_recall"] is None for r in rows)


def test_cli_retrieval_on_the_papers_split_shows_its_values(tmp_path):
    ranked = tmp_path / "ranked.json"
    ranked.write_text(json.dumps(_stand_in_paper_ranks()))
    result = _run("retrieval", "--gt", ranked, SCORES / "Main_Action")
    assert result.exit_code == 0, result.output
    text = _flat(result.stdout)
    assert f"({paper.paper_retrieval(LLAVA, 'main-action')[0]})" in text
    assert "(paper) = the paper's Table 4" in text and "paper split only" not in text


def test_cli_correlation_notes_once_after_the_last_table():
    result = _run("correlation", "--gt", GT, CONVIS_BENCH / "computed_conditioned_similarities",
                  CONVIS_BENCH / "computed_similarities")
    assert result.exit_code == 0, result.output
    text = _flat(result.stdout)
    assert text.count("concept-conditioned answers first") == 1
    assert text.endswith("concept-conditioned answers first, then global signals; model = paper's name when it has one")


@pytest.mark.parametrize(
    "gt, what, pairs",
    [
        (CONVIS_BENCH / "to_be_ranked.json", "is a retrieval split ({anchor: [candidates]}", GT),
        (GT, "holds pair ratings", GT),
        (LLAVA_LOCATION, "holds retrieval scores", "gt_conditioned_similarities.json"),
        (next((CONVIS_BENCH / "computed_similarities").rglob("*_similarities.json")), "holds pair scores",
         "gt_conditioned_similarities.json"),
    ],
)
def test_cli_retrieval_with_another_format_as_gt_says_what_to_run(gt, what, pairs):
    result = _run("retrieval", "--gt", gt, SCORES)
    assert result.exit_code == 2
    [line] = result.stderr.splitlines()
    assert line.startswith(f"error: {gt} {what}")
    assert f"`convis bench make-split --pairs {pairs} --out ranked.json`" in line
