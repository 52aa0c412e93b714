"""Shot units of one file: detected and sampled in one decode, the same frames a seeking decode reads."""

import json

import numpy as np
import pytest

from retrieval.core.sampling import FrameSpec
from retrieval.core.segmentation import ShotRule
from retrieval.media.frames import DecodeError, Span, VideoInfo, span_frame_indices
from retrieval.media.shot_units import cut_shots, shot_spans
from retrieval.media.shots import shots_from_cuts
from retrieval.media.video_decoder import VideoDecoder
from tests.paths import DATA, EXAMPLES

LABELS = json.loads((DATA / "shots" / "bikes.json").read_text())
BIKES = EXAMPLES / LABELS["video"]
SPECS = (FrameSpec("per-second", 4), FrameSpec("linspace", 3))


@pytest.fixture(scope="module")
def bikes():
    return cut_shots(BIKES, ShotRule("content"), SPECS)


def test_units_follow_the_labelled_cuts(bikes):
    expected = shots_from_cuts(LABELS["boundaries"], LABELS["frame_count"], LABELS["fps"])
    assert len(bikes.units) == len(expected)
    for unit, shot in zip(bikes.units, expected, strict=False):
        assert abs(unit.frames[0] - shot.start_frame) <= 2 and abs(unit.frames[1] - shot.end_frame) <= 2
        assert unit.start == pytest.approx(unit.frames[0] / LABELS["fps"])
    # the 8-frame last shot (242-249) is shorter than a second: merged into the one before
    assert bikes.units[-1].frames[1] == LABELS["frame_count"]
    assert [u.boundary for u in bikes.units] == ["start"] + ["cut"] * (len(bikes.units) - 1)
    assert bikes.units[0].confidence is None and all(0 < u.confidence <= 1 for u in bikes.units[1:])
    assert bikes.detector == "content" and bikes.info.frame_count == LABELS["frame_count"]


def test_frames_sampled_in_the_detection_pass_equal_a_seeking_decode_pixel_for_pixel(bikes):
    assert bikes.frames is not None  # a 10 s clip fits the one-pass budget
    for spec in SPECS:
        _, seeking = VideoDecoder(backends=["pyav"]).sample(BIKES, spec, cut=bikes.units)
        assert [span for span, _ in seeking] == bikes.units
        for (_, expected), got in zip(seeking, bikes.frames[spec], strict=False):
            assert got.indices == expected.indices
            assert got.pixels.shape == expected.pixels.shape and np.array_equal(got.pixels, expected.pixels)
            np.testing.assert_allclose(got.timestamps, expected.timestamps, atol=1e-6)


def test_a_file_over_the_budget_keeps_no_frames_and_the_same_units(bikes):
    over = cut_shots(BIKES, ShotRule("content"), SPECS, budget=1000)
    assert over.frames is None
    assert over.units == bikes.units


def test_a_unit_that_knows_its_frames_is_sampled_from_exactly_those():
    info = VideoInfo(250, 25.0, 10.0, 64, 48, "pyav")
    # 76 / 25 * 25 rounds below 76 in floating point: the frames, not the times, say where a shot starts
    span = Span(2, 76 / 25, 137 / 25, (76, 137))
    assert span_frame_indices(info, span, FrameSpec("linspace", 3)) == [76, 106, 136]
    assert shot_spans(shots_from_cuts([30], 100, 25.0, max_seconds=2.0))[-1].boundary == "split"


def test_what_is_not_a_video_fails_with_its_reason(tmp_path):
    junk = tmp_path / "junk.mp4"
    junk.write_bytes(b"not a video at all" * 100)
    with pytest.raises(DecodeError):
        cut_shots(junk, ShotRule("content"), SPECS)
    empty = tmp_path / "empty.mp4"
    empty.write_bytes(b"")
    with pytest.raises(DecodeError, match="empty"):
        cut_shots(empty, ShotRule("content"), SPECS)
