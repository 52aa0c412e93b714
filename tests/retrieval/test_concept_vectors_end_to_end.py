"""The concept-conditioned indexer end to end with real (tiny, random) checkpoints: ``convis index -i
qwen3-vl-embedding:<tiny> -i pe:<tiny>``, then a query on location and one on main action rank by different stored
vectors, and ``--json`` names the signal each concept was scored by."""

import json
import shutil

import pytest
from typer.testing import CliRunner

from bench.tiny.embedding import build_qwen3_vl_embedding
from bench.tiny.vision import tiny_pe
from retrieval.cli.app import app

runner = CliRunner()
CLIPS = ("cup.mp4", "box.mp4", "campus_01.mp4", "bikes.mp4")


@pytest.fixture(scope="module")
def indexed(tmp_path_factory, example_videos):
    tmp = tmp_path_factory.mktemp("conditioned")
    videos = tmp / "videos"
    videos.mkdir()
    for name in CLIPS:
        shutil.copy(example_videos / name, videos / name)
    embedding = build_qwen3_vl_embedding(tmp / "models" / "qwen3-vl-embedding" / "tiny")
    pe = tiny_pe(tmp / "models" / "pe" / "tiny")
    result = runner.invoke(app, ["index", str(videos), "--index-dir", str(tmp / "index"), "-i",
                                 f"qwen3-vl-embedding:{embedding}", "-i", f"pe:{pe}", "--json"])
    assert result.exit_code == 0, result.output
    return videos, tmp / "index", json.loads(result.stdout)


def query(indexed, concept):
    videos, index_dir, _ = indexed
    result = runner.invoke(app, ["query", "--anchor", str(videos / "cup.mp4"), "-c", concept, "--index-dir",
                                 str(index_dir), "--json", "-k", "3"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.mark.slow
def test_location_and_main_action_rank_by_their_own_stored_vectors(indexed):
    _, _, report = indexed
    assert report["concept_vectors"] == len(CLIPS) * 5  # one vector a unit and ConViS concept
    location, action = query(indexed, "location"), query(indexed, "main-action")
    assert location["signals"]["location"].startswith("qwen3-vl-embedding:")
    assert location["signals"]["location"].endswith("#location")
    assert action["signals"]["main-action"].endswith("#main-action")
    scores = [[round(h["total"], 6) for h in found["hits"]] for found in (location, action)]
    assert scores[0] != scores[1]  # two concepts, two sets of vectors: two different answers
