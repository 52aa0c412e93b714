"""How units are cut, as a value and as the label an index records."""

import pytest

from retrieval.core.segmentation import (
    SegmentationError,
    ShotRule,
    describe,
    from_label,
    parse_segment,
    segmentation_label,
)


@pytest.mark.parametrize("seconds, shots, label", [
    (None, None, ""),
    (10.0, None, "10"),
    (2.5, None, "2.5"),
    (None, ShotRule("content"), "shots:content:1:60"),
    (None, ShotRule("transnet", 0.5, None), "shots:transnet:0.5:"),
    (None, ShotRule("content", 0, 30), "shots:content:0:30"),
])
def test_each_way_of_cutting_has_a_label_that_reads_back_the_same(seconds, shots, label):
    assert segmentation_label(seconds, shots) == label
    assert from_label(label) == (seconds, shots)


def test_the_segment_option_names_shots_with_or_without_a_detector():
    assert parse_segment("shots") == ShotRule("auto")
    assert parse_segment(" Shots:TransNet ") == ShotRule("transnet")
    assert parse_segment("shots:content") == ShotRule("content")
    assert parse_segment("10s") is None and parse_segment("off") is None


@pytest.mark.parametrize("make", [
    lambda: parse_segment("shots:histogram"),
    lambda: ShotRule("content", min_seconds=5, max_seconds=2),
    lambda: ShotRule("content", min_seconds=-1),
    lambda: ShotRule("content", max_seconds=0),
])
def test_a_rule_that_cannot_cut_is_refused_with_its_reason(make):
    with pytest.raises(SegmentationError):
        make()


def test_the_units_in_words():
    assert describe(None, None) == "one unit per file"
    assert describe(10.0, None) == "10 s units"
    assert describe(None, ShotRule("content")) == "shot units (content; at least 1 s, at most 60 s)"
    assert describe(None, ShotRule("content", 2, None)) == "shot units (content; at least 2 s, no longest)"


@pytest.mark.parametrize("label", ["shots:content:0.1:0.2", "shots:transnet:0:100000"])
def test_a_stored_label_outside_todays_bounds_reads_back_and_only_asking_for_it_is_refused(label):
    _, rule = from_label(label)
    assert rule.label == label
    with pytest.raises(SegmentationError, match="--shot-max must be 0.5 to 86400 seconds"):
        rule.check_lengths()
