"""`convis bench retrieval` and `correlation` on different anchor sets: the paper's values only where they are
comparable; notes printed once; a file of another format given as --gt says what to run."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from bench import paper
from bench.evaluate import ALL_ANCHORS, PAPER_SPLIT
from bench.loaders import load_gt_pairs
from bench.split import make_split
from retrieval.cli.bench import app
from tests.bench.test_anchor_sets import stand_in_paper_ranks
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
    assert text.count("NDCG* = convis's own NDCG") == 1  # the column's note, once under the tables

    data = _run("retrieval", "--gt", ranked, SCORES, "--json")
    assert json.loads(data.stdout)["ndcg_variant"].startswith("convis's own NDCG: gain = worst human rank + 1")
    rows = json.loads(data.stdout)["results"]
    randoms = {r["concept"]: r for r in rows if r["model"] == "random choice"}
    assert {r["anchor_set"] for r in rows if r["concept"] == "location"} == {PAPER_SPLIT}
    assert randoms["location"]["n"] == 133
    unscored = randoms["order-of-actions"]  # no released scores: chance on everything the split ranks
    assert (unscored["anchor_set"], unscored["n"]) == (ALL_ANCHORS, len(made_split))
    assert all(r["paper_recall"] is None for r in rows)


def test_cli_retrieval_on_the_papers_split_shows_its_values(tmp_path):
    ranked = tmp_path / "ranked.json"
    ranked.write_text(json.dumps(stand_in_paper_ranks()))
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
    # the SBERT rows on the InternVL2.5 and Qwen2.5-VL captions hold the release's values: one more note
    assert text.endswith("concept-conditioned answers first, then global signals; model = paper's name when it has one "
                         + paper.RELEASE_NOTE)


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
