"""`convis query` concepts end to end, on the example clips indexed as `make demo` does (EfficientNet-Lite0 and
the captions' text signal): which signal scores each concept, typos, and one score scale with fusion."""

import json
import re

import pytest
from typer.testing import CliRunner

from retrieval.cli.app import app

runner = CliRunner()


def query(index_dir, anchor, *args):
    return runner.invoke(app, ["query", "--anchor", str(anchor), "--index-dir", str(index_dir), *map(str, args)])


def query_json(index_dir, anchor, *args) -> dict:
    result = query(index_dir, anchor, *args, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_concepts_on_one_signal_are_told_to_the_user_with_the_signal_each_uses(demo_index, example_videos):
    # both concepts given the captions' similarity alone (an override is the one signal used, no description
    # beside it): the same signal, the same scores
    data = query_json(demo_index, example_videos / "box.mp4", "-c", "main-subjects=0.6", "-c", "main-objects=0.4",
                      "--signal", "main-subjects=text", "--signal", "main-objects=text", "-k", 5)
    assert [c["signal"].split(":")[0] for c in data["concepts"]] == ["text", "text"]
    cup = next(h for h in data["hits"] if h["path"] == "cup.mp4")
    assert cup["scores"]["main-subjects"] == cup["scores"]["main-objects"]  # why the user is told
    [notice] = data["notices"]
    assert notice.startswith("main-subjects and main-objects both use the caption similarity (text), so their "
                             "scores are identical: without a reranker they cannot be told apart")
    assert "--reranker" in notice and "--signal main-objects=efficientnet-lite0" in notice
    # main-action has descriptions of its own (examples/captions/*.main-action.txt): scored apart from objects
    apart = query_json(demo_index, example_videos / "box.mp4", "-c", "main-action", "-c", "main-objects", "-k", 5)
    assert apart["concepts"][0]["description_signal"].endswith("#main-action") and not apart["notices"]
    assert any(h["scores"]["main-action"] != h["scores"]["main-objects"] for h in apart["hits"])
    table = query(demo_index, example_videos / "box.mp4", "-c", "main-action", "-c", "location", "-k", 5)
    assert table.exit_code == 0 and not table.stderr  # concepts on signals of their own: nothing to say
    assert "text#main-action" in table.stdout and "efficientnet-lite0" in table.stdout  # what scored each concept


def test_free_text_says_it_is_scored_by_the_signal_location_uses(demo_index, example_videos):
    camera = query_json(demo_index, example_videos / "campus_01.mp4", "-c", "camera angle", "-k", 5)
    location = query_json(demo_index, example_videos / "campus_01.mp4", "-c", "location",
                          "--signal", "location=efficientnet-lite0", "-k", 5)  # its visual signal alone
    assert [h["scores"]["camera-angle"] for h in camera["hits"]] == [h["scores"]["location"] for h in location["hits"]]
    assert camera["notices"] == ["'camera angle' is free text: no indexed signal measures it, so it is scored by "
                                 "the whole-clip similarity of efficientnet-lite0, as location is by default; "
                                 "rerank with an LMM (--reranker) to ask about 'camera angle' itself"]


def test_a_typo_of_a_convis_concept_is_one_line_unless_free_text_is_asked_for(demo_index, example_videos):
    anchor = example_videos / "campus_01.mp4"
    typo = query(demo_index, anchor, "-c", "locaton")
    assert typo.exit_code == 2 and not typo.stdout
    assert typo.stderr.strip() == ("error: unknown concept 'locaton'; did you mean location? "
                                   "(use --free-text to ask for it as written)")
    as_written = query_json(demo_index, anchor, "-c", "locaton", "--free-text")
    assert [c["key"] for c in as_written["concepts"]] == ["locaton"]
    assert query(demo_index, anchor, "-c", "Main_Action", "-c", "camera angle=2").exit_code == 0


def test_fusion_puts_every_concept_on_one_scale_with_readable_contributions(demo_index, example_videos):
    args = (example_videos / "box.mp4", "-c", "main-action", "-c", "camera angle", "--fusion", "default", "-k", "6")
    data = query_json(demo_index, *args)
    for hit in data["hits"]:
        fused, own = hit["scores"]["main-action"], hit["scores"]["camera-angle"]
        assert fused == pytest.approx((hit["ratings"]["main-action"] - 1) / 4, abs=1e-4)  # 1-5 rating -> 0-1
        assert 0 <= own <= 1 and 0 <= fused <= 1
        assert hit["total"] == pytest.approx((fused + own) / 2, abs=1e-4)
        assert sum(hit["contributions"]["main-action"].values()) == pytest.approx(fused, abs=1e-3)
    lines = [line.strip() for line in query(demo_index, *args).stdout.splitlines() if " average pair " in line]
    assert len(lines) == 6
    for line in lines:
        match = re.fullmatch(r"\d+\. main-action (\d\.\d{3}) = (\d\.\d{3}) average pair ([+-]) (\d\.\d{3}) text "
                             r"\(similarity (\d\.\d{3})\)", line)
        assert match, line
        score, base, sign, points = float(match[1]), float(match[2]), match[3], float(match[4])
        assert score == pytest.approx(base + (points if sign == "+" else -points), abs=2e-3)


def test_hits_the_fusion_rates_alike_are_ordered_by_their_own_similarity(demo_index, example_videos):
    data = query_json(demo_index, example_videos / "box.mp4", "-c", "main-action", "--fusion", "default")
    tied = [h for h in data["hits"] if h["total"] == data["hits"][-1]["total"]]
    inputs = [tuple(h["inputs"]["main-action"].values()) for h in tied]
    assert len(tied) > 2 and len(set(inputs)) == len(tied)  # one fused score for different signals
    similarities = [h["recall_scores"]["main-action"] for h in tied]
    assert similarities == sorted(similarities, reverse=True)  # ordered by the score before fusion
    assert any(n.startswith(f"main-action: {len(tied)} hits share one fused score") for n in data["notices"])
