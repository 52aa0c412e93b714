"""Metrics, loaders and the split builder on hand-made cases (ties, partial orders, coverage)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import kendalltau, spearmanr

from bench import metrics as m
from bench.loaders import (
    BenchDataError,
    GtPair,
    concept_key,
    describe,
    discover,
    load_gt_pairs,
    load_pair_scores,
    load_ranked,
    load_retrieval_scores,
    match_pairs,
    pair_key,
)
from bench.split import make_split, round_half
from tests.paths import CONVIS_BENCH

DATA = CONVIS_BENCH
GT = DATA / "gt_conditioned_similarities.json"


# ---------------------------------------------------------------- correlation


def test_correlation_is_scipy_x100_rounded():
    rng = np.random.default_rng(0)
    x, y = rng.integers(1, 6, 50).astype(float), rng.uniform(1, 5, 50)
    c = m.correlation(x, y)
    assert c.rho == round(spearmanr(x, y).statistic * 100, 2)
    assert c.tau == round(kendalltau(x, y).statistic * 100, 2)
    assert c.n == 50


def test_unparseable_zero_becomes_three_for_correlation():
    model = [0.0, 5.0, 1.0, 0.0, 4.0]
    human = [2.5, 4.5, 1.5, 3.5, 3.0]
    assert m.correlation(model, human) == m.correlation([3.0, 5.0, 1.0, 3.0, 4.0], human)


def test_correlation_of_a_constant_is_nan():
    c = m.correlation([3.0, 3.0, 3.0], [1.0, 2.0, 3.0])
    assert math.isnan(c.rho) and math.isnan(c.tau)


# ---------------------------------------------------------------- ranks


def test_dense_ranks_share_ranks_without_gaps():
    assert m.dense_ranks({"a": 0.2, "b": 0.9, "c": 0.9, "d": 0.5}) == {"a": 3, "b": 1, "c": 1, "d": 2}


def test_top_and_bottom_sets_keep_ties():
    ranks = {"a": 1, "b": 1, "c": 2, "d": 3, "e": 3}
    assert m.top_set(ranks) == {"a", "b"}
    assert m.bottom_set(ranks) == {"d", "e"}


# ---------------------------------------------------------------- top-1 / bottom-1


def test_model_tying_everything_has_full_recall_and_precision_k_over_n():
    human = {"a": 1, "b": 1, "c": 2, "d": 3}
    s = m.top1(human, {c: 4.0 for c in human})
    assert (s.recall, s.precision) == (1.0, 2 / 4)
    assert s.f1 == pytest.approx(2 * 1.0 * 0.5 / 1.5)


def test_split_level_tie_everything():
    human = {
        "x": {"a": 1, "b": 2, "c": 3},
        "y": {"a": 1, "b": 1, "c": 1, "d": 2},
    }
    model = {anchor: {c: 3.0 for c in ranks} for anchor, ranks in human.items()}
    r = m.retrieval(human, model)
    assert r.recall == pytest.approx(100)
    assert r.precision == pytest.approx(100 * (1 / 3 + 3 / 4) / 2)
    assert math.isnan(r.tau)  # undefined for every anchor when the model ties all
    assert r.n == 2


def test_top1_hit_miss_and_partial():
    human = {"a": 1, "b": 1, "c": 2}
    assert m.top1(human, {"a": 5, "b": 1, "c": 1}) == m.SetScores(0.5, 1.0, pytest.approx(2 / 3))
    assert m.top1(human, {"a": 1, "b": 1, "c": 5}) == m.SetScores(0.0, 0.0, 0.0)
    assert m.top1(human, {"a": 5, "b": 5, "c": 5}).precision == pytest.approx(2 / 3)


def test_unparseable_zero_ranks_lowest_in_retrieval():
    human = {"a": 1, "b": 2}
    assert m.top1(human, {"a": 0.0, "b": 2.0}).recall == 0.0
    assert m.bottom1(human, {"a": 3.0, "b": 0.0}).recall == 1.0


def test_bottom1_uses_the_worst_ranks():
    human = {"a": 1, "b": 2, "c": 3, "d": 3}
    s = m.bottom1(human, {"a": 5, "b": 1, "c": 1, "d": 4})
    assert (s.recall, s.precision) == (0.5, 0.5)


def test_retrieval_scores_common_anchors_and_predicts_from_every_candidate_of_the_model():
    human = {"x": {"a": 1, "b": 2}, "y": {"a": 1, "b": 2}}
    model = {"x": {"a": 1.0, "b": 0.5, "extra": 9.0}, "z": {"a": 1.0}}
    r = m.retrieval(human, model)
    # the model's top score went to a candidate the human did not rank: it predicted that one, and missed
    assert r.n == 1 and (r.recall, r.precision, r.f1) == (0, 0, 0)
    assert r.tau == 100  # orders are compared on the candidates both rank


def _reference_top_and_bottom(gt: dict, scores: dict) -> list[float]:
    """One anchor as ``compute_retrieval_metrics.py`` scores it: ``rank_values`` (dense ranks, 1 = highest)
    over every candidate the model scored, pred = those at the best (worst) model rank, rel = those at the best
    (worst) human rank; recall, precision, F1 at the top, then at the bottom."""
    distinct = sorted(set(scores.values()), reverse=True)
    ranked = {k: distinct.index(v) + 1 for k, v in scores.items()}
    out = []
    for pick in (min, max):
        rel = {k for k, v in gt.items() if v == pick(gt.values())}
        pred = {k for k, v in ranked.items() if v == pick(ranked.values())}
        hit = len(rel & pred)
        recall, precision = hit / len(rel), hit / len(pred)
        out += [recall, precision, 2 * recall * precision / (recall + precision) if recall + precision else 0]
    return out


def test_retrieval_at_1_follows_the_reference_with_candidates_the_human_did_not_rank():
    rng = np.random.default_rng(4)
    human, model = {}, {}
    for i in range(300):
        ranked = [f"c{j}" for j in range(int(rng.integers(2, 6)))]
        extra = [f"x{j}" for j in range(int(rng.integers(0, 3)))]
        human[f"q{i}"] = {c: int(rng.integers(1, 4)) for c in ranked}
        model[f"q{i}"] = {c: float(rng.integers(0, 6)) for c in ranked + extra}  # 0.0 kept, many ties
    r = m.retrieval(human, model)
    expected = 100 * np.mean([_reference_top_and_bottom(human[a], model[a]) for a in human], axis=0)
    ours = (r.recall, r.precision, r.f1, r.bottom_recall, r.bottom_precision, r.bottom_f1)
    assert ours == pytest.approx(tuple(expected), abs=1e-9)


# ---------------------------------------------------------------- random choice


def test_random_choice_formula():
    s = m.random_choice({"a": 1, "b": 1, "c": 2, "d": 3})  # n = 4, k = 2
    assert (s.recall, s.precision) == (1 / 4, 2 / 4)
    assert s.f1 == pytest.approx(0.5 * 2 / 3)


def _random_partial_orders(rng, n_anchors):
    orders = {}
    for i in range(n_anchors):
        n = int(rng.integers(2, 7))
        orders[f"q{i}"] = {f"c{j}": int(r) for j, r in enumerate(rng.integers(1, 4, n))}
    return orders


def _one_pick(ranks, picked):
    return {c: float(c == picked) for c in ranks}


def test_random_choice_equals_exhaustive_enumeration_of_picks():
    human = _random_partial_orders(np.random.default_rng(1), 40)
    expected = m.random_retrieval(human)
    # every pick equally likely: average the real metric over all of them, anchor by anchor
    per_anchor = [
        np.mean([[getattr(m.top1(h, _one_pick(h, c)), f) for f in ("recall", "precision", "f1")] for c in h], axis=0)
        for h in human.values()
    ]
    exact = 100 * np.mean(per_anchor, axis=0)
    assert (expected.recall, expected.precision, expected.f1) == pytest.approx(tuple(exact), abs=1e-9)


def test_random_choice_matches_seeded_simulation():
    rng = np.random.default_rng(7)
    human = _random_partial_orders(rng, 30)
    expected = m.random_retrieval(human)
    runs = []
    for _ in range(4000):
        picks = [m.top1(h, _one_pick(h, rng.choice(list(h)))) for h in human.values()]
        runs.append([100 * np.mean([getattr(p, f) for p in picks]) for f in ("recall", "precision", "f1")])
    mean, se = np.mean(runs, axis=0), np.std(runs, axis=0) / np.sqrt(len(runs))
    assert np.all(np.abs(mean - [expected.recall, expected.precision, expected.f1]) < 4 * se)


def test_split_level_retrieval_of_a_random_picker_is_near_the_expectation():
    rng = np.random.default_rng(11)
    human = _random_partial_orders(rng, 2000)
    model = {a: _one_pick(h, rng.choice(list(h))) for a, h in human.items()}
    r, expected = m.retrieval(human, model), m.random_retrieval(human)
    assert (r.recall, r.precision, r.f1) == pytest.approx((expected.recall, expected.precision, expected.f1), abs=3.0)


# ---------------------------------------------------------------- order metrics


def test_anchor_tau_signs_and_ties():
    human = {"a": 1, "b": 2, "c": 3}
    assert m.anchor_tau(human, {"a": 0.9, "b": 0.5, "c": 0.1}) == pytest.approx(1.0)
    assert m.anchor_tau(human, {"a": 0.1, "b": 0.5, "c": 0.9}) == pytest.approx(-1.0)
    assert math.isnan(m.anchor_tau(human, {"a": 1, "b": 1, "c": 1}))


def test_ndcg_perfect_reversed_and_cutoff():
    human = {"a": 1, "b": 2, "c": 3}
    assert m.ndcg(human, {"a": 3, "b": 2, "c": 1}) == pytest.approx(1.0)
    worst = m.ndcg(human, {"a": 1, "b": 2, "c": 3})
    gains, disc = np.array([1, 2, 3]), 1 / np.log2(np.arange(2, 5))
    assert worst == pytest.approx((gains * disc).sum() / (gains[::-1] * disc).sum())
    assert m.ndcg(human, {"a": 1, "b": 2, "c": 3}, k=1) == pytest.approx(1 / 3)


def test_ndcg_matches_sklearn_including_ties():
    sklearn_metrics = pytest.importorskip("sklearn.metrics")
    rng = np.random.default_rng(3)
    for _ in range(50):
        n = int(rng.integers(2, 8))
        human = {f"c{i}": int(r) for i, r in enumerate(rng.integers(1, 4, n))}
        model = {c: float(s) for c, s in zip(human, rng.integers(1, 4, n), strict=False)}  # small range: many ties
        rel = m.relevance(human)
        expected = sklearn_metrics.ndcg_score([[rel[c] for c in human]], [[model[c] for c in human]])
        assert m.ndcg(human, model) == pytest.approx(expected)


def test_relevance_from_ranks():
    assert m.relevance({"a": 1, "b": 2, "c": 2, "d": 4}) == {"a": 4, "b": 3, "c": 3, "d": 1}


def test_average_precision_at_k():
    ranked = ["a", "b", "c", "d"]
    assert m.average_precision_at_k(ranked, {"a", "c"}, 3) == pytest.approx((1 + 2 / 3) / 2)
    assert m.average_precision_at_k(ranked, {"a", "c"}, 1) == 1.0
    assert m.average_precision_at_k(ranked, {"b"}, 1) == 0.0
    assert m.average_precision_at_k(ranked, {"d"}, 4) == pytest.approx(1 / 4)
    assert m.average_precision_at_k(ranked, set(), 4) == 0.0


def test_map_at_k_averages_queries():
    queries = [(["a", "b"], {"a"}), (["a", "b"], {"b"})]
    assert m.map_at_k(queries, 2) == pytest.approx(100 * (1 + 0.5) / 2)
    assert math.isnan(m.map_at_k([], 2))


# ---------------------------------------------------------------- loaders


def test_pair_key_drops_folder_prefixes_but_keeps_order():
    assert pair_key("videos_trimmed/education/1754_007.mp4", "2385_006.mp4") == ("1754_007.mp4", "2385_006.mp4")
    assert pair_key("a/x.mp4", "b/y.mp4") != pair_key("b/y.mp4", "a/x.mp4")


def test_concept_key_accepts_release_spellings():
    for name in ("Main_Action", "MainAction", "main-action", "Main Action"):
        assert concept_key(name) == "main-action"
    assert concept_key("Order_Of_Actions") == "order-of-actions"
    assert concept_key("computed_similarities") is None


def test_gt_loader_uses_concept_slugs():
    gt = load_gt_pairs(GT)
    assert len(gt) == 610
    pair = gt[("3863_003.mp4", "883_000.mp4")]
    assert set(pair.scores) == {"main-action", "main-subjects", "main-objects", "location", "order-of-actions"}
    assert all(1 <= v <= 5 for v in pair.scores.values())


def test_partial_file_is_scored_on_what_it_covers(tmp_path):
    gt = load_gt_pairs(GT)
    entries = json.loads((DATA / "computed_similarities/dinov2-large/dinov2-large_similarities.json").read_text())
    part = [{**e, "video1": Path(e["video1"]).name} for e in entries[:273]]  # bare names, like some releases
    path = tmp_path / "part_similarities.json"
    path.write_text(json.dumps(part))
    matched = match_pairs(load_pair_scores(path), gt, "location")
    assert (matched.n, matched.n_gt) == (273, 610)
    human = [gt[pair_key(e["video1"], e["video2"])].scores["location"] for e in part]
    assert m.correlation(matched.model, matched.human) == m.correlation([e["similarity"] for e in part], human)


def test_reversed_pairs_do_not_match(tmp_path):
    gt = {("a.mp4", "b.mp4"): GtPair("a.mp4", "b.mp4", {"location": 4.0})}
    assert match_pairs({("b.mp4", "a.mp4"): 5.0}, gt, "location").n == 0


def test_repeated_pair_keeps_its_last_score(tmp_path):
    path = tmp_path / "s.json"
    path.write_text(json.dumps([
        {"video1": "x/a.mp4", "video2": "b.mp4", "similarity": 1.0},
        {"video1": "a.mp4", "video2": "y/b.mp4", "similarity": 4.0},
    ]))
    assert load_pair_scores(path) == {("a.mp4", "b.mp4"): 4.0}


@pytest.mark.parametrize(
    "content, message",
    [
        ("{", "not valid JSON"),
        ('{"a": 1}', "expected a list"),
        ('[{"video1": "a", "video2": "b"}]', "lacks similarity"),
        ('[{"video1": "a", "video2": "b", "similarity": "high"}]', "expected a number"),
    ],
)
def test_bad_pair_files_raise_clear_errors(tmp_path, content, message):
    path = tmp_path / "s.json"
    path.write_text(content)
    with pytest.raises(BenchDataError, match=message):
        load_pair_scores(path)


def test_missing_file_is_a_bench_error(tmp_path):
    with pytest.raises(BenchDataError, match="not found"):
        load_gt_pairs(tmp_path / "nope.json")


def test_ranked_and_retrieval_score_loaders(tmp_path):
    ranked = tmp_path / "ranked.json"
    ranked.write_text(json.dumps([{"anchor": "v/a.mp4", "MainAction": {"b.mp4": 1, "c.mp4": 2}, "Location": {"b.mp4": 1}}]))
    assert load_ranked(ranked) == {"main-action": {"a.mp4": {"b.mp4": 1, "c.mp4": 2}}, "location": {"a.mp4": {"b.mp4": 1}}}
    ranked.write_text(json.dumps([{"anchor": "a.mp4", "MainAction": {"b.mp4": 1.5}}]))
    with pytest.raises(BenchDataError, match="integer"):
        load_ranked(ranked)
    scores = load_retrieval_scores(
        DATA / "computed_retrieval_scores/Location/LLaVA-OneVision-Qwen2-7B/LLaVA-OneVision-Qwen2-7B_Location_ranking.json"
    )
    assert len(scores) == 133 and all(len(c) == 4 for c in scores.values())


def test_model_and_concept_from_the_release_layout():
    cond = describe(Path("x/Order_Of_Actions/InternVL2_5-8B/InternVL2_5-8B_Order_Of_Actions_similarities.json"), "_similarities.json")
    assert (cond.model, cond.concept) == ("InternVL2_5-8B", "order-of-actions")
    glob = describe(Path("computed_similarities/LLaVA-OneVision_mPLUG-Owl3-7B-240728/LLaVA-OneVision_similarities.json"), "_similarities.json")
    assert (glob.model, glob.concept) == ("LLaVA-OneVision_mPLUG-Owl3-7B-240728", None)
    loose = describe(Path("out/dinov2_Location_similarities.json"), "_similarities.json")
    assert (loose.model, loose.concept) == ("dinov2", "location")


def test_discover_walks_folders_once(tmp_path):
    files = discover([DATA / "computed_conditioned_similarities", DATA / "computed_conditioned_similarities/Location"], "_similarities.json")
    assert len(files) == 30
    assert {f.concept for f in files} == {"main-action", "main-subjects", "main-objects", "location", "order-of-actions"}
    with pytest.raises(BenchDataError, match="not found"):
        discover([tmp_path / "missing"], "_similarities.json")
    with pytest.raises(BenchDataError, match="no \\*_similarities.json"):
        discover([tmp_path], "_similarities.json")


# ---------------------------------------------------------------- split


@pytest.mark.parametrize(
    "mean, expected",
    [(3.25, 3.5), (3.75, 4.0), (2.249, 2.0), (3.125, 3.0), (4.875, 5.0), (1.0, 1.0), (2.5, 2.5), (13 / 6, 2.0), (3.2499999999999996, 3.5)],
)
def test_round_half_goes_up_on_halves(mean, expected):
    assert round_half(mean) == expected


def _gt(*pairs):
    return {(a, b): GtPair(a, b, {"main-action": s, "location": s}) for a, b, s in pairs}


def test_make_split_anchor_selection_and_ties():
    split = make_split(_gt(("a", "b", 3.3), ("a", "c", 3.6), ("a", "d", 1.0), ("b", "c", 2.0), ("e", "f", 5.0)))
    by_anchor = {e["anchor"]: e for e in split}
    # a: 3 partners; b: a and c; c: a and b; d, e, f: one partner each
    assert set(by_anchor) == {"a", "b", "c"}
    # 3.3 -> 3.5 and 3.6 -> 3.5 tie at rank 1; 1.0 is rank 2 (dense)
    assert by_anchor["a"]["MainAction"] == {"b": 1, "c": 1, "d": 2}
    assert by_anchor["b"]["Location"] == {"a": 1, "c": 2}
    assert set(by_anchor["a"]) == {"anchor", "MainAction", "Location"}


def test_make_split_pair_in_both_orders_is_one_candidate():
    split = make_split(_gt(("a", "b", 2.0), ("b", "a", 3.0), ("a", "c", 4.0)))
    by_anchor = {e["anchor"]: e for e in split}
    assert set(by_anchor) == {"a"}
    assert by_anchor["a"]["MainAction"] == {"c": 1, "b": 2}  # b = mean(2, 3) = 2.5


def test_make_split_on_the_release_round_trips_through_the_loader(tmp_path):
    gt = load_gt_pairs(GT)
    split = make_split(gt)
    degree = {}
    for a, b in gt:
        degree.setdefault(a, set()).add(b)
        degree.setdefault(b, set()).add(a)
    assert {e["anchor"] for e in split} == {v for v, p in degree.items() if len(p) >= 2}
    path = tmp_path / "ranked.json"
    path.write_text(json.dumps(split))
    ranks = load_ranked(path)
    assert list(ranks) == ["main-action", "main-subjects", "main-objects", "location", "order-of-actions"]
    for anchor_ranks in ranks["main-action"].values():
        values = sorted(set(anchor_ranks.values()))
        assert values == list(range(1, len(values) + 1))  # dense
