"""Engine.query: what a result says about its own scores and about results it could not give."""

import numpy as np
import pytest

from retrieval.api import Engine, QueryRequest
from tests.indexes import indexed_copies
from tests.retrieval.search.test_confidence import expected_label, expected_z


@pytest.fixture(scope="module")
def segmented(tmp_path_factory):
    """Three clips cut into 10 s units: campus_01 and campus_02 (20 s) in two each, cup (8 s) in one."""
    return indexed_copies(tmp_path_factory.mktemp("segmented"), ("campus_01.mp4", "campus_02.mp4", "cup.mp4"),
                          ["efficientnet-lite0"], segment_seconds=10.0)


def test_confidence_labels_come_from_every_recalled_candidates_totals(example_index, example_videos):
    engine = Engine(example_index)
    everything = engine.query(QueryRequest(example_videos / "campus_01.mp4", ["location"], k=100))
    top = engine.query(QueryRequest(example_videos / "campus_01.mp4", ["location"], k=3)).as_dict()
    totals = np.array([h.total for h in everything.hits])
    assert top["spread"]["n"] == len(totals)  # the pool is every candidate, not the 3 shown
    assert top["spread"]["low"] == pytest.approx(totals.min(), abs=1e-4)
    for hit in top["hits"]:
        z = expected_z(list(totals), hit["total"])
        assert everything.spread.z(hit["total"]) == pytest.approx(z, abs=0.01)
        assert everything.spread.label(hit["total"]) == expected_label(list(totals), hit["total"])
    assert top["calibration"] is not None  # with a background, the labels shown are read against it
    assert top["ranges"]["location"] == pytest.approx([totals.min(), totals.max()], abs=1e-4)


def test_fewer_results_than_asked_say_that_the_anchor_is_never_a_result(segmented):
    engine = Engine(segmented / ".convis")
    whole = engine.query(QueryRequest(segmented / "campus_01.mp4", ["location"], k=8))
    assert len(whole.hits) == 3 and not any(h.path == "campus_01.mp4" for h in whole.hits)
    assert any(n.startswith("3 results, not 8: 2 unit(s) are the anchor itself (the whole file campus_01.mp4)")
               for n in whole.notices), whole.notices


def test_a_unit_anchor_finds_the_other_units_of_its_own_file(segmented):
    engine = Engine(segmented / ".convis")
    unit = engine.query(QueryRequest(segmented / "campus_01.mp4", ["location"], k=8, start=0.0, end=10.0))
    spans = [(h.path, h.start) for h in unit.hits]
    assert ("campus_01.mp4", 10.0) in spans and ("campus_01.mp4", 0.0) not in spans
    assert len(unit.hits) == 4
    said = ("4 results, not 8: 1 unit(s) of campus_01.mp4 overlap the anchor's window (0:00.0-0:10.0) and a query "
            "never returns its own anchor")
    assert any(said in n for n in unit.notices), unit.notices
    assert not any("--segment" in n for n in unit.notices)  # its other unit is a result: units are short already
