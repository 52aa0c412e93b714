"""Result rows flatten to the records `bench correlation` / `bench retrieval` write as JSON and CSV."""

import math

from bench import paper
from bench.evaluate import PAPER_SPLIT, CorrelationRow, RetrievalRow, random_rows
from bench.metrics import Correlation, Retrieval, random_retrieval
from bench.report import records

CORRELATION_COLUMNS = [
    "model", "kind", "concept", "rho", "tau", "n", "n_gt",
    "paper_rho", "paper_tau", "paper_delta_rho", "paper_delta_tau", "paper_name", "paper_source",
    "paper_decimals", "path",
]
RETRIEVAL_COLUMNS = [
    "model", "concept", "recall", "precision", "f1", "bottom_recall", "bottom_precision", "bottom_f1",
    "tau", "ndcg", "n", "n_gt", "paper_recall", "paper_precision", "paper_f1", "path", "anchor_set",
]


def test_correlation_record_is_flat_in_column_order():
    row = CorrelationRow("m", paper.GLOBAL, "location", Correlation(57.4, 41.7, 600), 610, 57.0, 41.0, "M", 1, "f.json")
    record = row.record()
    assert list(record) == CORRELATION_COLUMNS
    assert (record["rho"], record["tau"], record["n"], record["n_gt"]) == (57.4, 41.7, 600, 610)
    assert record["paper_delta_rho"] == 57.4 - 57.0 and record["paper_delta_tau"] == 41.7 - 41.0
    without_paper = CorrelationRow("m", paper.GLOBAL, "location", Correlation(57.4, 41.7, 600), 610).record()
    assert list(without_paper) == CORRELATION_COLUMNS
    assert (without_paper["paper_delta_rho"], without_paper["paper_delta_tau"]) == (None, None)


def test_retrieval_record_spreads_the_paper_triple():
    m = Retrieval(50.0, 40.0, 44.4, 10.0, 9.0, 8.0, 30.0, 70.0, 12)
    record = RetrievalRow("m", "location", m, 14, (51.0, 41.0, 45.0), "f.json", PAPER_SPLIT, {"a": {"b": 1}}).record()
    assert list(record) == RETRIEVAL_COLUMNS
    assert [record[k] for k in ("recall", "n", "n_gt", "paper_f1", "path")] == [50.0, 12, 14, 45.0, "f.json"]
    assert record["anchor_set"] == "paper split"
    without_paper = RetrievalRow("m", "location", m, 14).record()
    assert list(without_paper) == RETRIEVAL_COLUMNS
    assert (without_paper["paper_recall"], without_paper["paper_f1"]) == (None, None)
    assert without_paper["anchor_set"] == "all"


def test_random_rows_carry_the_analytic_baseline_and_json_safe_nans():
    human = {"location": {"a": {"x": 1, "y": 2, "z": 2}, "b": {"x": 1, "y": 1}}}
    [row] = random_rows(human)
    expected = random_retrieval(human["location"])
    m = row.scores
    assert (m.recall, m.precision, m.f1) == (expected.recall, expected.precision, expected.f1)
    assert math.isnan(row.scores.ndcg)
    [record] = records([row])
    assert record["ndcg"] is None and record["n"] == record["n_gt"] == 2
    # two made-up anchors are not the paper's split, so its random-choice values would not be comparable
    assert (record["paper_recall"], record["paper_precision"], record["paper_f1"]) == (None, None, None)
    assert record["anchor_set"] == "all"
