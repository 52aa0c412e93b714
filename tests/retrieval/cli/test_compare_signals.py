"""`convis compare` without an LMM: the index's own signals score the pair, exactly as a query does."""

import json
import shutil

from typer.testing import CliRunner

from retrieval.api import Engine, QueryRequest
from retrieval.cli.app import app

runner = CliRunner()


def compare(*args):
    return runner.invoke(app, ["compare", *map(str, args)])


def test_compare_without_a_reranker_scores_the_pair_by_the_indexs_signals(example_index, example_videos):
    box, cup = example_videos / "box.mp4", example_videos / "cup.mp4"
    result = compare(box, cup, "-c", "location=3", "-c", "main-objects=1", "--index-dir", example_index, "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    query = Engine(example_index).query(QueryRequest(box, ["location=3", "main-objects=1"], k=9))
    hit = next(h for h in query.hits if h.path == "cup.mp4")
    assert data["reranker"] is None and data["rank"] == hit.rank
    assert {c["key"]: c["score"] for c in data["concepts"]} == {k: round(v, 4) for k, v in hit.scores.items()}
    assert data["total"] == round(hit.total, 4)
    assert {c["signal"].split(":")[0] for c in data["concepts"]} == {"efficientnet-lite0"}
    table = compare(box, cup, "-c", "location", "--index-dir", example_index)
    assert table.exit_code == 0, table.output
    assert "scored by recall similarity (location: efficientnet-lite0)" in " ".join(table.stdout.split())


def test_compare_without_an_index_or_a_reranker_says_what_to_pass(example_videos, tmp_path, monkeypatch):
    for name in ("box.mp4", "cup.mp4"):
        shutil.copy(example_videos / name, tmp_path / name)
    monkeypatch.chdir(tmp_path)
    result = compare(tmp_path / "box.mp4", tmp_path / "cup.mp4", "-c", "location")
    assert result.exit_code == 2 and not result.stdout
    [line] = result.stderr.strip().splitlines()
    assert "no .convis index near" in line and "--index-dir" in line and "--reranker" in line


def test_compare_with_a_clip_outside_the_index_is_one_line(example_index, example_videos, tmp_path):
    outside = tmp_path / "copy.mp4"
    outside.write_bytes((example_videos / "bikes.mp4").read_bytes()[:-100])  # other content than any indexed file
    result = compare(example_videos / "box.mp4", outside, "-c", "location", "--index-dir", example_index)
    assert result.exit_code == 2
    assert result.stderr.strip() == (f"error: copy.mp4 is not in the index at {example_index}, so its signals "
                                     "cannot score it: index it, or ask an LMM (--reranker)")


def test_compare_with_where_ranks_b_among_the_units_the_filter_keeps(example_index, example_videos):
    box, cup = example_videos / "box.mp4", example_videos / "cup.mp4"
    concepts = ["location=3", "main-objects=1"]
    everything = Engine(example_index).query(QueryRequest(box, concepts, k=20))
    rank = next(h.rank for h in everything.hits if h.path == "cup.mp4")
    above = sorted({h.path for h in everything.hits if h.rank < rank})
    assert above, "cup.mp4 must have clips ranked above it for the filter to move it"
    where = f"name != {above[0]}"
    narrowed = Engine(example_index).query(QueryRequest(box, concepts, k=20, where=(where,)))
    hit = next(h for h in narrowed.hits if h.path == "cup.mp4")
    result = compare(box, cup, "-c", concepts[0], "-c", concepts[1], "--index-dir", example_index, "--where", where,
                     "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["rank"] == hit.rank < rank  # among fewer units, above the one left out
    assert {c["key"]: c["score"] for c in data["concepts"]} == {k: round(v, 4) for k, v in hit.scores.items()}


def test_compare_with_where_that_leaves_b_out_or_with_a_reranker_is_one_line(example_index, example_videos):
    box, cup = example_videos / "box.mp4", example_videos / "cup.mp4"
    left_out = compare(box, cup, "-c", "location", "--index-dir", example_index, "--where", "name != cup.mp4")
    assert left_out.exit_code == 2 and not left_out.stdout
    assert left_out.stderr.strip() == ("error: cup.mp4 is not among the units 'name != cup.mp4' keeps, so it has "
                                       "no rank among them")
    asked = compare(box, cup, "-c", "location", "--index-dir", example_index, "--where", "size > 0", "-r",
                    "qwen2.5-vl")
    assert asked.exit_code == 2 and len(asked.stderr.strip().splitlines()) == 1
    assert "--where" in asked.stderr and "reranker" in asked.stderr
