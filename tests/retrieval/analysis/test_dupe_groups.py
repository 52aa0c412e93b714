"""Near-duplicate grouping on arrays: the range search's pairs against a brute-force product, groups joined
through chains, trimmed copies counted by how much of the shorter file matches, and --auto's threshold read from
a background as the rule says (each recomputed here)."""

import math

import numpy as np
import pytest

from retrieval.analysis import dupe_groups
from retrieval.analysis.dupes import AUTO_Z, auto_threshold
from retrieval.store.catalog.records import BACKGROUND_QUANTILES, BackgroundRow


def unit_rows(n: int, dim: int = 32, seed: int = 0) -> np.ndarray:
    rows = np.random.default_rng(seed).normal(size=(n, dim)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def near(rows: np.ndarray, noise: float, seed: int) -> np.ndarray:
    moved = rows + np.random.default_rng(seed).normal(scale=noise, size=rows.shape).astype(np.float32)
    return moved / np.linalg.norm(moved, axis=1, keepdims=True)


def test_range_search_finds_every_pair_a_brute_force_product_finds():
    base = unit_rows(300)
    vectors = np.concatenate([base, near(base[:50], 0.05, 1), near(base[:20], 0.2, 2)])
    threshold = 0.97
    found = dupe_groups.unit_pairs(vectors, threshold)
    similarity = (vectors.astype(np.float64) @ vectors.T.astype(np.float64) + 1) / 2
    a, b = np.nonzero(np.triu(similarity >= threshold, 1))
    assert set(zip(found.a.tolist(), found.b.tolist(), strict=True)) == set(zip(a.tolist(), b.tolist(), strict=True))
    assert len(a) >= 40  # the close copies are in range: the comparison above is not empty
    assert np.allclose(np.sort(found.similarity), np.sort(similarity[a, b]), atol=1e-5)


def test_chains_join_into_one_group_and_singletons_are_left_out():
    groups = dupe_groups.components(7, np.array([0, 1, 4]), np.array([1, 2, 5]))
    assert [g.tolist() for g in groups] == [[0, 1, 2], [4, 5]]
    assert dupe_groups.components(3, np.zeros(0, np.int64), np.zeros(0, np.int64)) == []


def files_of(spans: list[tuple[int, float, float]], vectors: np.ndarray) -> dupe_groups.Units:
    file, start, end = (np.array(c) for c in zip(*spans, strict=True))
    return dupe_groups.Units(np.arange(len(spans)), vectors, file.astype(np.int64), start.astype(float),
                             end.astype(float))


def test_a_trimmed_copy_is_a_pair_and_a_file_sharing_one_unit_is_not():
    long = unit_rows(10, seed=3)
    trimmed = near(long[3:7], 0.01, 4)  # 4 s of the 10 s file, every unit matching
    one_shared = np.concatenate([near(long[:1], 0.01, 5), unit_rows(3, seed=6)])  # 1 of its 4 units matches
    spans = [(0, i, i + 1) for i in range(10)] + [(1, i, i + 1) for i in range(4)] + [(2, i, i + 1) for i in range(4)]
    units = files_of(spans, np.concatenate([long, trimmed, one_shared]))
    found = dupe_groups.file_pairs(units, dupe_groups.unit_pairs(units.vectors, 0.99))
    assert list(zip(found.a.tolist(), found.b.tolist(), strict=True)) == [(0, 1)]
    assert found.cover[0] == pytest.approx(1.0)
    assert found.spans[(0, 1)] == (3.0, 7.0) and found.spans[(1, 0)] == (0.0, 4.0)


def background(quantiles) -> BackgroundRow:
    return BackgroundRow("s", 100, 2000, tuple(quantiles), 1)


def test_auto_threshold_is_the_background_median_distance_shrunk_by_its_log_sigma():
    quantiles = [0.40, 0.43, 0.48, 0.58, 0.65, 0.83, 0.95, 0.99]
    q = dict(zip(BACKGROUND_QUANTILES, quantiles, strict=True))
    d25, d50, d75 = 1 - q[0.25], 1 - q[0.50], 1 - q[0.75]
    sigma = max(math.log(d50 / d75), math.log(d25 / d50)) / 0.6745
    expected = 1 - d50 * math.exp(-AUTO_Z * sigma)
    assert auto_threshold(background(quantiles)) == pytest.approx(expected)
    assert 0.85 < expected < 0.95


def test_auto_threshold_is_at_least_the_high_confidence_cut_and_none_without_spread():
    tight = [0.50, 0.50, 0.50, 0.50, 0.60, 0.9, 0.95, 0.99]  # no lower spread: no cuts
    assert auto_threshold(background(tight)) is None
    assert auto_threshold(None) is None
    for quantiles in ([0.10, 0.12, 0.13, 0.14, 0.30, 0.5, 0.6, 0.7], [0.2, 0.3, 0.4, 0.5, 0.52, 0.6, 0.7, 0.8]):
        q = dict(zip(BACKGROUND_QUANTILES, quantiles, strict=True))
        high = q[0.5] + 2.3263 * (q[0.75] - q[0.5]) / 0.6745
        d25, d50, d75 = 1 - q[0.25], 1 - q[0.50], 1 - q[0.75]
        log_rule = 1 - d50 * math.exp(-AUTO_Z * max(math.log(d50 / d75), math.log(d25 / d50)) / 0.6745)
        assert auto_threshold(background(quantiles)) == pytest.approx(min(1.0, max(high, log_rule)))


def test_the_lowest_threshold_pairs_each_unit_with_its_nearest_only_and_says_so():
    vectors = unit_rows(600)  # at 0.5 about half of all 179,700 pairs are in range
    found = dupe_groups.unit_pairs(vectors, np.nextafter(0.5, 1), neighbours=16)
    assert len(found.a) <= 600 * 16 and np.all(found.a < found.b)
    assert found.saturated == 600  # every unit had more than 16 in range
    assert len(set(zip(found.a.tolist(), found.b.tolist(), strict=True))) == len(found.a)  # each pair once
    assert found.similarity.min() >= 0.5


def test_a_few_units_pair_exactly_as_a_brute_force_product_and_saturate_nothing():
    vectors = unit_rows(40)  # fewer than the neighbours kept: every pair in range is found
    found = dupe_groups.unit_pairs(vectors, 0.55)
    similarity = (vectors.astype(np.float64) @ vectors.T.astype(np.float64) + 1) / 2
    a, b = np.nonzero(np.triu(similarity >= 0.55, 1))
    assert set(zip(found.a.tolist(), found.b.tolist(), strict=True)) == set(zip(a.tolist(), b.tolist(), strict=True))
    assert found.saturated == 0
