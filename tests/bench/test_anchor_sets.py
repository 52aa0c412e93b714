"""Retrieval rows on different anchors stay apart, each with its own random choice; the paper's values only
where they are comparable."""

from __future__ import annotations

import json

import numpy as np
import pytest

from bench import paper
from bench.evaluate import ALL_ANCHORS, PAPER_SPLIT, random_rows, retrieval_rows
from bench.loaders import ScoreFile, discover, load_gt_pairs, ranked_from_data
from bench.split import make_split
from retrieval.core.concepts import BENCH_KEYS
from tests.paths import CONVIS_BENCH

GT = CONVIS_BENCH / "gt_conditioned_similarities.json"
SCORES = CONVIS_BENCH / "computed_retrieval_scores"
LLAVA = "LLaVA-OneVision-Qwen2-7B"
LLAVA_LOCATION = SCORES / "Location" / LLAVA / f"{LLAVA}_Location_ranking.json"


@pytest.fixture(scope="module")
def made_split() -> list[dict]:
    return make_split(load_gt_pairs(GT))


def stand_in_paper_ranks() -> list[dict]:
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
    human = ranked_from_data(stand_in_paper_ranks(), "stand-in")
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


def test_the_ndcg_column_names_convis_own_variant(tmp_path):
    from bench import report

    human = {"location": {"a": {"x": 1, "y": 2}}}
    scores = tmp_path / "s.json"
    scores.write_text(json.dumps({"a": {"x": 0.9, "y": 0.1}}))
    rows = retrieval_rows([ScoreFile(scores, "s", "location")], human)
    table, notes = report.retrieval_tables(rows)
    headers = [str(c.header) for c in table.columns]
    # the paper reports no NDCG: a short header that does not widen the table, marked, and its note under the tables
    assert "NDCG" not in headers and "NDCG*" in headers and max(map(len, headers)) == len("anchors")
    assert ("NDCG* = convis's own NDCG: gain = worst human rank + 1 - rank, tied scores share gains; not in the "
            "paper") in str(notes).splitlines()
    assert report.json_notes(rows)["ndcg_variant"].startswith("convis's own NDCG: gain = worst human rank + 1")
