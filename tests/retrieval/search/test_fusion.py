"""Concept fusion at query time: missing signals, vectorised and single-pair scores, weights files."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from bench.fusion import query_time_signals
from bench.fusion_train import fit_concept, fit_fusion, save_fusion
from retrieval.core.concepts import CONVIS_CONCEPTS
from retrieval.search.fusion import FusionError, FusionModel, default_weights_path
from tests.fusion_tables import linear_table

# ---------------------------------------------------------------- missing signals


def test_a_pair_missing_a_signal_is_scored_by_the_others():
    table = linear_table()
    model = fit_fusion(table, ["location"], kinds=("isotonic",), alphas=(0.1,))
    full = model.predict("location", {"s1": 1.0, "s2": -0.5, "s3": 0.2, "s4": 0.0})
    partial = model.predict("location", {"s1": 1.0, "s2": None, "s3": 0.2, "s4": 0.0, "unknown": 9.0})
    assert full.used == ["s1", "s2", "s3", "s4"]
    assert partial.used == ["s1", "s3", "s4"] and set(partial.contributions) == set(partial.used)
    assert math.isfinite(partial.score) and partial.score != full.score
    assert partial.score == pytest.approx(partial.intercept + sum(partial.contributions.values()))

    # the same as a ridge refitted on the present signals only
    cols = {s: table.columns["location"][s] for s in ("s1", "s3", "s4")}
    refit = fit_concept("location", cols, table.labels["location"], "isotonic", 0.1)
    assert refit.weights() == pytest.approx(model.weights("location", partial.used))


def test_vectorised_and_single_pair_predictions_agree():
    table = linear_table(n=200)
    model = fit_fusion(table, ["location"])
    cols = {s: v[:5].copy() for s, v in table.columns["location"].items()}
    cols["s2"][1] = np.nan
    batch = model.predict_arrays("location", cols)
    for i in range(5):
        one = model.predict("location", {s: None if np.isnan(v[i]) else v[i] for s, v in cols.items()})
        assert batch[i] == pytest.approx(one.score)


def test_signals_missing_in_training_and_no_signal_at_all():
    table = linear_table(n=300)
    table.columns["location"]["s1"][::4] = np.nan  # e.g. LMM answers that could not be parsed
    model = fit_fusion(table, ["location"])
    assert model.models["location"].coverage["s1"] == 225
    assert np.all(np.isfinite(model.predict_arrays("location", table.columns["location"])))
    with pytest.raises(FusionError, match="none of the model's signals"):
        model.predict("location", {"dinov2": 0.9})
    with pytest.raises(FusionError, match="no fusion model"):
        model.predict("main-action", {"s1": 0.0})


# ---------------------------------------------------------------- files


def test_save_load_roundtrip(tmp_path):
    table = linear_table(n=200)
    table.columns["location"]["s2"][::5] = np.nan
    model = fit_fusion(table, ["location"], meta={"note": "synthetic", "nan": float("nan")})
    path = save_fusion(model, tmp_path / "w.json")
    text = path.read_text()
    json.loads(text, parse_constant=lambda c: pytest.fail(f"non-standard JSON constant {c}"))
    loaded = FusionModel.load(path)
    assert loaded.meta["note"] == "synthetic" and loaded.meta["nan"] is None
    cols = table.columns["location"]
    np.testing.assert_allclose(loaded.predict_arrays("location", cols), model.predict_arrays("location", cols))
    assert loaded.weights("location") == model.weights("location")
    pair = {"s1": 0.3, "s3": -1.0}
    assert loaded.predict("location", pair) == model.predict("location", pair)


def test_load_rejects_other_files(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "something-else"}')
    with pytest.raises(FusionError, match="not a convis-fusion"):
        FusionModel.load(bad)
    with pytest.raises(FusionError, match="cannot read"):
        FusionModel.load(tmp_path / "missing.json")


def test_default_weights_are_query_time_signals_on_convis_concepts():
    model = FusionModel.load(default_weights_path())
    assert set(model.concepts) == set(CONVIS_CONCEPTS)
    producible = query_time_signals()
    for concept in model.concepts:
        assert set(model.signals(concept)) <= producible
    score = model.predict("location", {"dinov2": 0.9, "reranker:llava-onevision": 4.0})
    assert score.used == ["dinov2", "reranker:llava-onevision"] and 1 < score.score < 5.5
    assert "in-sample" in model.meta["fitted_on"]
