"""Fitting concept fusion: recovery of a known linear truth, held-out honesty, the release data."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy.stats import spearmanr

import bench.fusion as bf
from bench.fusion import FUSED, build_table, cross_validate, margins, query_time_signals
from bench.fusion_train import PairTable, fit_fusion, make_folds
from bench.loaders import SIMILARITIES_SUFFIX, discover, load_gt_pairs
from retrieval.search.fusion import FusionModel, default_weights_path
from tests.fusion_tables import TRUTH, linear_table, shared_video_pairs, write_release, write_scores


def rho(x: np.ndarray, y: np.ndarray) -> float:
    return 100 * float(spearmanr(x, y).statistic)


# ---------------------------------------------------------------- learning


@pytest.mark.parametrize("kind", ["isotonic", "ecdf"])
def test_weights_recover_a_linear_truth(kind):
    table = linear_table(n=1500) if kind == "isotonic" else uniform_table()
    model = fit_fusion(table, ["location"], kinds=(kind,), alphas=(0.001,))
    w = model.weights("location")
    # N(0,1) signals under isotonic, U(0,1) under ecdf: either way z_j is the signal itself, rescaled to SD 1
    scale = 1.0 if kind == "isotonic" else 1 / math.sqrt(12)
    for name, truth in TRUTH.items():
        assert w.get(name, 0.0) == pytest.approx(truth * scale, abs=0.04), name
    assert model.models["location"].intercept == pytest.approx(3 + (0 if kind == "isotonic" else 0.45), abs=0.05)


def uniform_table(n: int = 1500, seed: int = 1) -> PairTable:
    rng = np.random.default_rng(seed)
    cols = {name: rng.uniform(0, 1, n) for name in TRUTH}
    y = 3 + sum(w * cols[name] for name, w in TRUTH.items()) + 0.05 * rng.standard_normal(n)
    return PairTable([(f"a{i}", f"b{i}") for i in range(n)], {"location": y}, {"location": cols})


def test_cross_validated_fusion_beats_every_single_signal():
    result = cross_validate(linear_table(), ["location"], folds=5, seed=0)
    rows = {r.signal: r for r in result.rows}
    assert all(rows[FUSED].rho > rows[s].rho + 10 for s in TRUTH)
    assert rows[FUSED].folds_won == 5
    assert margins(result.rows)[("random", "location")]["best_signal"] == "s1"


def test_runs_are_deterministic():
    a = cross_validate(linear_table(n=200), ["location"], folds=4, seed=3, group_by_video=True)
    b = cross_validate(linear_table(n=200), ["location"], folds=4, seed=3, group_by_video=True)
    assert a.rows == b.rows and a.choices == b.choices


# ---------------------------------------------------------------- held-out honesty


@pytest.mark.parametrize("grouped", [False, True])
def test_folds_test_every_pair_once_and_grouped_folds_share_no_video(grouped):
    pairs = shared_video_pairs()
    folds = make_folds(pairs, 10, seed=1, group_by_video=grouped)
    tested = np.sort(np.concatenate([f.test for f in folds]))
    assert tested.tolist() == list(range(len(pairs)))
    for f in folds:
        assert not set(f.train) & set(f.test)
        if grouped:
            test_videos = {v for i in f.test for v in pairs[i]}
            assert not {v for i in f.train for v in pairs[i]} & test_videos
        else:
            assert len(f.train) + len(f.test) == len(pairs)


def test_a_signal_that_knows_only_the_other_half_does_not_help():
    """s_a equals the label on half A and is noise on half B; s_b the other way round.

    Trained on A (where only s_a is informative) and tested on B (where s_a is noise), an honest model
    scores about 0; had the test half been seen in training, s_b would get weight and reveal the labels.
    """
    rng = np.random.default_rng(0)
    n = 400
    pairs = [(f"a{i}", f"b{i}") for i in range(n)]
    y = rng.uniform(1, 5, n)
    first, second = (f.test for f in make_folds(pairs, 2, seed=7))
    s_a, s_b = rng.uniform(1, 5, n), rng.uniform(1, 5, n)
    s_a[first], s_b[second] = y[first], y[second]
    table = PairTable(pairs, {"location": y}, {"location": {"s_a": s_a, "s_b": s_b}})

    held_out = {r.signal: r.rho for r in cross_validate(table, ["location"], folds=2, seed=7).rows}
    assert abs(held_out[FUSED]) < 15

    leaky = fit_fusion(table, ["location"]).predict_arrays("location", table.columns["location"])
    assert rho(leaky, y) > 60  # the same model scored on pairs it was fitted on


def test_grouped_cv_never_fits_on_a_test_video(monkeypatch):
    pairs = shared_video_pairs(n=200, videos=90)
    rng = np.random.default_rng(2)
    table = PairTable(pairs, {"location": rng.uniform(1, 5, 200)},
                      {"location": {"s": rng.uniform(0, 1, 200), "t": rng.uniform(0, 1, 200)}})
    seen: list[set[str]] = []
    real_fit = bf.fit_fusion

    def spy(train, *args, **kwargs):
        seen.append({v for p in train.pairs for v in p})
        return real_fit(train, *args, **kwargs)

    monkeypatch.setattr(bf, "fit_fusion", spy)
    cross_validate(table, ["location"], folds=5, seed=0, group_by_video=True)
    folds = make_folds(pairs, 5, seed=0, group_by_video=True)
    assert len(seen) == len(folds)
    for train_videos, fold in zip(seen, folds, strict=False):
        assert not train_videos & {v for i in fold.test for v in pairs[i]}


# ---------------------------------------------------------------- the release data


def test_default_weights_are_reproduced_from_the_release(convis_bench, convis_bench_gt):
    files = discover([convis_bench / "computed_similarities", convis_bench / "computed_conditioned_similarities"],
                     SIMILARITIES_SUFFIX)
    table = build_table(files, load_gt_pairs(convis_bench_gt), keep=query_time_signals())
    shipped = FusionModel.load(default_weights_path())
    meta = shipped.meta
    refit = fit_fusion(table, shipped.concepts, inner_folds=meta["inner_folds"], seed=meta["seed"],
                       group_by_video=meta["group_by_video"])
    for concept in shipped.concepts:
        assert refit.weights(concept) == pytest.approx(shipped.weights(concept), abs=1e-9)


def test_release_folders_map_to_stable_signal_names(convis_bench, convis_bench_gt):
    files = discover([convis_bench / "computed_similarities", convis_bench / "computed_conditioned_similarities"],
                     SIMILARITIES_SUFFIX)
    table = build_table(files, load_gt_pairs(convis_bench_gt))
    assert set(table.signals("location")) == {
        "dinov2", "text", "clipscore", "vqascore", "reranker:llava-onevision", "reranker:llava-onevision-0.5b",
        "reranker:llava-video", "reranker:qwen2.5-vl", "reranker:internvl2.5", "reranker:mplug-owl3",
        # SBERT on the other two caption sets: no convis signal of their own, so they keep their folder name
        "InternVL2_5-8B", "Qwen2.5-VL-7B-Instruct",
    }
    # unparseable LMM answers (0.0) are missing, not a score of 0
    assert np.isnan(table.columns["location"]["reranker:llava-onevision-0.5b"]).sum() == 43


def test_a_descriptions_file_per_concept_is_that_concepts_descriptions_signal_and_fits(tmp_path):
    root = write_release(tmp_path)
    gt = json.loads((root / "gt.json").read_text())
    pairs = [(g["video1"], g["video2"]) for g in gt]
    rng = np.random.default_rng(1)
    for folder, key in (("Main_Action", "MainAction"), ("Location", "Location")):
        truth = np.array([g["conditioned_similarity"][key] for g in gt])
        out = root / "computed_conditioned_similarities" / folder / "descriptions"
        out.mkdir(parents=True)
        write_scores(out / f"descriptions_{folder}{SIMILARITIES_SUFFIX}", pairs,
                      0.4 + 0.1 * truth + 0.05 * rng.standard_normal(len(gt)))
    table = build_table(discover([root / "computed_conditioned_similarities"], SIMILARITIES_SUFFIX),
                        load_gt_pairs(root / "gt.json"))
    assert set(table.signals("location")) == {"descriptions", "reranker:llava-onevision"}
    assert "descriptions" in query_time_signals()
    model = fit_fusion(table, ["location", "main-action"], inner_folds=3)
    assert model.predict("location", {"descriptions": 0.8}).used == ["descriptions"]
