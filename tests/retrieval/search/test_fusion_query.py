"""`convis query --fusion`: per-concept fused scores from every available signal, with contributions."""

import json

import pytest
from typer.testing import CliRunner

from retrieval.api import Engine, QueryRequest
from retrieval.cli.app import app
from retrieval.pipeline.settings import IndexSettings
from retrieval.search.fusion import FusionModel, default_weights_path


@pytest.fixture(scope="module")
def captioned_index(tmp_path_factory, example_videos, tiny_models):
    index_dir = tmp_path_factory.mktemp("captioned") / ".convis"
    captions = example_videos.parent / "captions"
    Engine(index_dir).index(example_videos, [f"dinov2:{tiny_models['dinov2']}"],
                            IndexSettings(captions=captions, workers=1))
    return index_dir


def test_fused_scores_are_the_weights_file_applied_to_the_signals(captioned_index, example_videos):
    engine = Engine(captioned_index)
    result = engine.query(QueryRequest(example_videos / "box.mp4", ["main-action", "location"], k=4, fusion="default"))
    model = FusionModel.load(default_weights_path())
    plain = {h.path: h for h in Engine(captioned_index).query(QueryRequest(example_videos / "box.mp4", ["main-action"],
                                                                           k=8)).hits}
    for hit in result.hits:
        for concept in ("main-action", "location"):
            parts = hit.contributions[concept]
            assert set(parts) == {"intercept", "dinov2", "text"}
            assert hit.scores[concept] == pytest.approx(sum(parts.values()))
        # the text signal's input is the recall similarity of the caption vectors
        expected = model.predict("main-action", {"text": plain[hit.path].scores["main-action"],
                                                 "dinov2": _dinov2_sim(engine, hit)})
        assert hit.ratings["main-action"] == pytest.approx(expected.score, abs=1e-6)  # the 1-5 prediction
        assert hit.scores["main-action"] == pytest.approx((expected.score - 1) / 4, abs=1e-6)  # on the 0-1 scale
        assert hit.total == pytest.approx((hit.scores["main-action"] + hit.scores["location"]) / 2)
    totals = [h.total for h in result.hits]
    assert totals == sorted(totals, reverse=True)


def _dinov2_sim(engine, hit):
    """The hit's dinov2 similarity, from a plain query that scores location with dinov2."""
    forced = Engine(engine.index_dir).query(QueryRequest(engine.root / "box.mp4", ["location"], k=8,
                                                         signal_overrides={"location": "dinov2"}))
    return {h.path: h.scores["location"] for h in forced.hits}[hit.path]


def test_free_text_concepts_keep_their_own_score_with_a_notice(captioned_index, example_videos):
    result = Engine(captioned_index).query(QueryRequest(example_videos / "box.mp4", ["camera angle"], k=3,
                                                        fusion="default"))
    assert any("camera-angle" in n for n in result.notices)
    assert all(not h.contributions for h in result.hits)


def test_cli_fusion_json_and_missing_weights(captioned_index, example_videos, tmp_path):
    runner = CliRunner()
    ok = runner.invoke(app, ["query", "--anchor", str(example_videos / "cup.mp4"), "-c", "main-objects",
                             "--index-dir", str(captioned_index), "--fusion", "default", "--json"])
    assert ok.exit_code == 0, ok.output
    data = json.loads(ok.stdout)
    assert data["fusion"] == "default" and "contributions" in data["hits"][0]
    missing = runner.invoke(app, ["query", "--anchor", str(example_videos / "cup.mp4"), "-c", "location",
                                  "--index-dir", str(captioned_index), "--fusion", str(tmp_path / "nope.json")])
    assert missing.exit_code == 2 and "fusion weights not found" in missing.stderr
