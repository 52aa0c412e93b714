"""Reranked queries and compare through the engine, with a tiny random Qwen2-VL checkpoint."""

import json
import shutil

import av
import pytest
from typer.testing import CliRunner

from bench.tiny.vlm import build_qwen_vl
from retrieval.api import CompareRequest, Engine, QueryRequest
from retrieval.cli.app import app
from retrieval.media.video_decoder import VideoDecoder


@pytest.fixture(scope="module")
def qwen(tmp_path_factory):
    return str(build_qwen_vl(tmp_path_factory.mktemp("vlm") / "qwen2-vl-tiny"))


@pytest.fixture
def index_copy(example_index, tmp_path):
    """The shared example index with a private score cache (tests must not see each other's scores)."""
    target = tmp_path / ".convis"
    shutil.copytree(example_index, target, ignore=shutil.ignore_patterns("scores.duckdb"))
    return target


def test_reranked_query_reorders_the_recall_set_by_lmm_scores(index_copy, example_videos, qwen):
    anchor = example_videos / "campus_01.mp4"
    recall = Engine(index_copy).query(QueryRequest(anchor, ["location"], k=5))
    engine = Engine(index_copy)
    reranked = engine.query(QueryRequest(anchor, ["location"], k=5, reranker=qwen, rerank_top=5))
    assert {h.path for h in reranked.hits} == {h.path for h in recall.hits}
    totals = [h.total for h in reranked.hits]
    assert totals == sorted(totals, reverse=True)
    assert all(1.0 <= h.ratings["location"] <= 5.0 for h in reranked.hits)  # the LMM's own answers
    assert all(h.scores["location"] == pytest.approx((h.ratings["location"] - 1) / 4) for h in reranked.hits)
    assert all(h.recall_scores for h in reranked.hits)  # recall similarity kept beside the LMM score
    assert engine.models.pair_scorer(qwen).model_pairs == 5
    assert engine.models.frames.decodes == 6  # the anchor once, each candidate once
    for hit in reranked.hits:  # the frames behind each score: the anchor's, then the candidate's
        seen = hit.as_dict()["seen"]["location"]
        assert len(seen["a"]["indices"]) == len(seen["b"]["indices"]) == 8 and len(seen["size"]) == 2
    assert len({tuple(h.seen["location"]["a"]["indices"]) for h in reranked.hits}) == 1  # one anchor


def test_a_reranked_query_reports_the_rerankers_notices(index_copy, example_videos, qwen):
    engine = Engine(index_copy)
    model = engine.reranker(qwen)
    model.notices.append("qwen2-vl: no bfloat16 on this GPU; running in float32")  # as the dtype choice says it
    result = engine.query(QueryRequest(example_videos / "campus_01.mp4", ["location"], k=3, reranker=qwen,
                                       rerank_top=3))
    assert "qwen2-vl: no bfloat16 on this GPU; running in float32" in result.notices
    assert "qwen2-vl: no bfloat16 on this GPU; running in float32" in result.as_dict()["notices"]


def test_repeated_query_makes_no_model_call(index_copy, example_videos, qwen):
    anchor = example_videos / "campus_01.mp4"
    first = Engine(index_copy).query(QueryRequest(anchor, ["location", "main-action"], k=3, reranker=qwen,
                                                  rerank_top=3))
    again = Engine(index_copy)  # a new command: only the on-disk score cache is shared
    second = again.query(QueryRequest(anchor, ["location", "main-action"], k=3, reranker=qwen, rerank_top=3))
    assert again.models.pair_scorer(qwen).model_pairs == 0 and again.models.frames.decodes == 0
    assert [h.as_dict() for h in second.hits] == [h.as_dict() for h in first.hits]


def test_weights_combine_reranker_scores_as_eq2(index_copy, example_videos, qwen):
    result = Engine(index_copy).query(QueryRequest(example_videos / "box.mp4", ["location=3", "main-objects=1"], k=3,
                                                   reranker=qwen, rerank_top=3))
    for hit in result.hits:
        assert hit.total == pytest.approx(0.75 * hit.scores["location"] + 0.25 * hit.scores["main-objects"])


def test_symmetric_compare_averages_both_orders(index_copy, example_videos, qwen):
    a, b = example_videos / "box.mp4", example_videos / "cup.mp4"
    engine = Engine(index_copy)
    ab = engine.compare(CompareRequest(a, b, ["main-objects"], qwen)).concepts[0].score
    ba = engine.compare(CompareRequest(b, a, ["main-objects"], qwen)).concepts[0].score
    both = engine.compare(CompareRequest(a, b, ["main-objects"], qwen, symmetric=True))
    assert both.concepts[0].score == pytest.approx((ab + ba) / 2)
    assert both.model_pairs == 0  # both directions were already cached


def test_compare_cli_json(index_copy, example_videos, qwen):
    result = CliRunner().invoke(app, ["compare", str(example_videos / "box.mp4"), str(example_videos / "cup.mp4"),
                                      "-c", "main-action", "-c", "location", "-r", qwen, "--json",
                                      "--index-dir", str(index_copy), "--mode", "greedy"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert [c["key"] for c in data["concepts"]] == ["main-action", "location"]
    for c in data["concepts"]:  # greedy: a parsed 1-5 answer, or null when unreadable; never 0
        assert c["rating"] is None or c["rating"] in {1.0, 2.0, 3.0, 4.0, 5.0}
    # the evidence behind each score: the frames each video showed and the pixel size that reached the model
    for key, name in (("a", "box.mp4"), ("b", "cup.mp4")):
        info = VideoDecoder().backends[0].probe(example_videos / name)
        step = max(1, round(info.fps))  # the Qwen reference: one frame a second, then uniform to 8 (or padded)
        seconds = list(range(0, info.frame_count, step))
        gap = len(seconds) / 8
        expected = [seconds[int(i * gap + gap / 2)] for i in range(8)] if len(seconds) >= 8 else \
            seconds + [seconds[-1]] * (8 - len(seconds))
        with av.open(str(example_videos / name)) as container:  # presentation times, frame by frame
            times = sorted(float(p.pts * p.time_base) for p in container.demux(video=0) if p.size)
        for c in data["concepts"]:
            assert c["seen"][key]["indices"] == expected
            assert c["seen"][key]["timestamps"] == pytest.approx([times[i] for i in expected], abs=0.002)
    assert all(len(c["seen"]["size"]) == 2 and c["seen"]["size"][0] % 28 == 0 for c in data["concepts"])


def test_rerank_batch_option_sets_the_pairs_per_forward_pass(index_copy, example_videos, qwen):
    engine = Engine(index_copy, rerank_batch=1)
    engine.query(QueryRequest(example_videos / "campus_01.mp4", ["location"], k=3, reranker=qwen, rerank_top=3))
    assert engine.models.pair_scorer(qwen).reranker.batch_size == 1
    result = CliRunner().invoke(app, ["compare", str(example_videos / "box.mp4"), str(example_videos / "cup.mp4"),
                                      "-c", "location", "-r", qwen, "--rerank-batch", "0"])
    assert result.exit_code == 2  # at least one pair a pass


def test_compare_errors_are_one_line(example_videos, tmp_path):
    runner = CliRunner()
    missing = runner.invoke(app, ["compare", str(tmp_path / "nope.mp4"), str(example_videos / "cup.mp4"),
                                  "-c", "location", "-r", str(tmp_path)])
    assert missing.exit_code == 2 and "video not found" in missing.stderr
    bad_model = runner.invoke(app, ["compare", str(example_videos / "box.mp4"), str(example_videos / "cup.mp4"),
                                    "-c", "location", "-r", "/no/such/weights"])
    assert bad_model.exit_code == 1 and "Traceback" not in bad_model.output  # a missing model: not a usage error
    bad_mode = runner.invoke(app, ["compare", str(example_videos / "box.mp4"), str(example_videos / "cup.mp4"),
                                   "-c", "location", "--mode", "sampled"])
    assert bad_mode.exit_code == 2 and "--mode" in bad_mode.stderr


def query_json(index_copy, anchor, qwen, *extra: str) -> dict:
    result = CliRunner().invoke(app, ["query", "--anchor", str(anchor), "-c", "location", "-c", "main-action",
                                      "-r", qwen, "--rerank-top", "3", "--json", "--index-dir", str(index_copy),
                                      *extra])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_a_reranked_query_reports_its_model_work(index_copy, example_videos, qwen):
    anchor = example_videos / "campus_01.mp4"
    shared = query_json(index_copy, anchor, qwen)
    # 3 candidates, 2 concepts: the anchor and each candidate through the vision tower once, one prefix a concept
    assert shared["work"] == {"vision_calls": 1 + 3, "prefix_passes": 2, "pair_passes": 3 * 2}
    assert query_json(index_copy, anchor, qwen)["work"] == {"vision_calls": 0, "prefix_passes": 0, "pair_passes": 0}
    fresh = index_copy.parent / "fresh"  # no cached scores: every pair asked again, each as one whole clip
    shutil.copytree(index_copy, fresh, ignore=shutil.ignore_patterns("scores.duckdb"))
    alone = query_json(fresh, anchor, qwen, "--no-share")
    assert alone["work"] == {"vision_calls": 2 * 3 * 2, "prefix_passes": 0, "pair_passes": 3 * 2}
    for got, want in zip(shared["hits"], alone["hits"], strict=True):
        assert got["path"] == want["path"] and got["total"] == pytest.approx(want["total"], abs=1e-5)
