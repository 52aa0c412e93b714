"""Confidence labels come from the query's own score spread (Iglewicz-Hoaglin modified z-scores, against the lower
of two clear groups when Otsu's split finds them)."""

import numpy as np
import pytest

from retrieval.search.confidence import Spread, concept_ranges


def otsu_lower(values):
    """Otsu's split written out as loops: the lower group when between/total variance >= 0.8 (and >= 3 in it)."""
    v = sorted(values)
    n, mean = len(v), sum(v) / len(v)
    total = sum((x - mean) ** 2 for x in v) / n
    best, cut = -1.0, None
    for i in range(1, n):
        low, high = v[:i], v[i:]
        between = (i / n) * ((n - i) / n) * (sum(low) / i - sum(high) / (n - i)) ** 2
        if between > best:
            best, cut = between, i
    return v[:cut] if total > 0 and best / total >= 0.8 and cut >= 3 else None


def expected_z(pool, x, descending=True):
    """0.6745 (x - median) / MAD against the reference (0.6745 = 1 / 1.4826), signed so standing out is up."""
    signed = [p if descending else -p for p in pool]
    reference = np.asarray(otsu_lower(signed) or signed, dtype=float)
    median = np.median(reference)
    mad = np.median(np.abs(reference - median))
    return 0.6745 * ((x if descending else -x) - median) / mad


def expected_label(pool, x, descending=True):
    z = expected_z(pool, x, descending)
    return "strong" if z >= 3.5 else "likely" if z >= 2 else "weak"


def test_labels_follow_the_modified_z_score_written_out():
    rng = np.random.default_rng(0)
    pool = list(rng.normal(0.7, 0.02, size=60)) + [0.80, 0.76, 0.73]
    spread = Spread.of(pool)
    assert not spread.grouped and otsu_lower(pool) is None  # one group with a tail, not two groups
    for x in (0.80, 0.76, 0.73, 0.70):
        assert spread.z(x) == pytest.approx(expected_z(pool, x), rel=1e-3)
        assert spread.label(x) == expected_label(pool, x)
    assert {spread.label(0.80), spread.label(0.70)} == {"strong", "weak"}
    assert (spread.low, spread.high) == (min(pool), max(pool))


def test_two_clear_groups_measure_the_upper_one_against_the_lower():
    # half the candidates match (a small collection): against the whole pool nothing would stand out
    pool = [0.991, 0.989, 0.987, 0.987, 0.983, 0.974, 0.97, 0.74, 0.737, 0.67, 0.64, 0.638, 0.618, 0.617]
    spread = Spread.of(pool)
    assert spread.grouped and otsu_lower(pool) == sorted(pool)[:7]
    for x in pool:
        assert spread.z(x) == pytest.approx(expected_z(pool, x), rel=1e-3)
        assert spread.label(x) == expected_label(pool, x)
    assert all(spread.label(x) == "strong" for x in pool[:7])
    whole = np.asarray(pool)
    assert 0.6745 * (0.991 - np.median(whole)) / np.median(np.abs(whole - np.median(whole))) < 2  # the pool alone


@pytest.mark.parametrize("pool", [list(np.random.default_rng(1).normal(size=200)),
                                  list(np.random.default_rng(2).uniform(size=200))])
def test_one_spread_out_group_is_not_split(pool):
    assert not Spread.of(pool).grouped and otsu_lower(pool) is None


def test_a_most_different_query_reads_the_scores_the_other_way():
    pool = [0.5, 0.52, 0.49, 0.51, 0.5, 0.3]
    assert Spread.of(pool, descending=False).label(0.3) == expected_label(pool, 0.3, descending=False) == "strong"
    assert Spread.of(pool).label(0.3) == "weak"


def test_ties_fall_back_to_the_mean_absolute_deviation():
    pool = [0.5] * 8 + [0.9, 0.1]  # MAD is 0: more than half the scores tie
    spread = Spread.of(pool)
    mean_ad = np.mean(np.abs(np.array(pool) - 0.5))
    assert not spread.grouped and spread.z(0.9) == pytest.approx(0.4 / (1.2533 * mean_ad))


@pytest.mark.parametrize("pool", [[0.5] * 10, [0.9, 0.8, 0.7, 0.6]])
def test_no_label_when_the_scores_cannot_tell(pool):
    spread = Spread.of(pool)
    assert spread.label(pool[0]) is None and spread.z(pool[0]) is None


def test_unreadable_scores_are_left_out_and_ranges_are_per_concept():
    assert Spread.of([None, float("nan")]) is None
    scores = [{"location": 0.9, "main-action": None}, {"location": 0.6, "main-action": 0.2}]
    assert concept_ranges(scores, ["location", "main-action", "main-objects"]) == {
        "location": [0.6, 0.9], "main-action": [0.2, 0.2]}


def test_a_lower_group_of_ties_gives_way_to_the_whole_pool():
    pool = [0.25] * 15 + [1.0] * 5  # two groups, the lower one all ties: it tells no scale
    spread = Spread.of(pool)
    assert not spread.grouped and spread.label(1.0) == "likely"  # z 3.19: labelled, where it had none
    mean_ad = np.mean(np.abs(np.array(pool) - 0.25))
    assert spread.z(1.0) == pytest.approx(0.75 / (1.2533 * mean_ad))
