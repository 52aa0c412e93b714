"""Confidence against the index's background: the unit-pair quantiles kept at index time, strong / likely / weak
that mean the same across queries, no_match, --most-different's labels, and the relative rule for old indexes."""

import shutil

import duckdb
import numpy as np
import pytest
from typer.testing import CliRunner

from retrieval.api import Engine, QueryRequest, SearchRequest
from retrieval.cli.app import app
from retrieval.store.catalog import Catalog

KAYAKS = "two people kayaking on a lake"
CUP = "a hand holding a cup"
QUANTILES = (0.01, 0.10, 0.25, 0.50, 0.75, 0.90, 0.95, 0.99)


def all_pairs(index_dir, signal) -> np.ndarray:
    """Every pair of distinct units' (cos + 1) / 2, from the stored vectors (the index has few units)."""
    with Catalog(index_dir / "catalog.duckdb", read_only=True) as catalog:
        _, matrix = catalog.vectors(signal)
    upper = np.triu_indices(len(matrix), 1)
    return ((matrix.astype(np.float64) @ matrix.T.astype(np.float64) + 1) / 2)[upper]


def cuts(index_dir, signal) -> dict[str, float]:
    """The rule, written out: from the background's median, sigma from its quartiles (a normal's 0.6745), high at
    its 99th percentile (2.3263 sigma), medium at its 90th (1.2816)."""
    q25, q50, q75 = np.quantile(all_pairs(index_dir, signal), (0.25, 0.50, 0.75))
    up, down = (q75 - q50) / 0.6745, (q50 - q25) / 0.6745
    return {"high": q50 + 2.3263 * up, "medium": q50 + 1.2816 * up, "unlike": q50 - 1.2816 * down,
            "far": q50 - 2.3263 * down}


def text_signal(index_dir) -> str:
    with Catalog(index_dir / "catalog.duckdb", read_only=True) as catalog:
        return next(r.indexer for r in catalog.indexers() if r.kind == "text")


def test_each_signals_background_is_the_quantiles_of_its_stored_unit_pairs(demo_index):
    with Catalog(demo_index / "catalog.duckdb", read_only=True) as catalog:
        signals = {r.indexer for r in catalog.indexers()} | {r.signal for r in catalog.description_signals()}
        kept = catalog.backgrounds()
        units = {s: len(catalog.vectors(s)[0]) for s in signals}
    assert set(kept) == signals
    for signal, row in kept.items():
        expected = np.quantile(all_pairs(demo_index, signal), QUANTILES)
        assert row.units == units[signal] and row.pairs == units[signal] * (units[signal] - 1) // 2
        np.testing.assert_allclose(row.quantiles, expected, rtol=0, atol=1e-9)


def test_a_sentence_nothing_matches_says_so_and_labels_by_the_background(demo_index):
    result = Engine(demo_index).search(SearchRequest(KAYAKS, 10))
    medium = cuts(demo_index, text_signal(demo_index))["medium"]
    assert result.hits and result.hits[0].total < medium  # the example clips hold no lake
    answer = result.as_dict()
    assert result.no_match and answer["no_match"] and answer["no_match_note"] == "no clip matches this well; " \
                                                                                  "closest shown"
    assert {h["confidence"] for h in answer["hits"]} == {"weak"}


def test_labels_follow_the_background_not_the_querys_own_scores(demo_index):
    result = Engine(demo_index).search(SearchRequest(CUP, 10))
    rule = cuts(demo_index, text_signal(demo_index))
    labels = {h.path: result.confidence(h) for h in result.hits}
    for hit in result.hits:
        want = "strong" if hit.total >= rule["high"] else "likely" if hit.total >= rule["medium"] else "weak"
        assert labels[hit.path] == want, hit.path
    assert labels["box.mp4"] != "strong"  # a hand and a box: no closer to the sentence than unrelated captions
    assert result.no_match == (result.hits[0].total < rule["medium"])


def test_most_different_labels_what_it_ranks(demo_index, example_videos):
    result = Engine(demo_index).query(QueryRequest(example_videos / "campus_01.mp4", ["location"], 10,
                                                   most_different=True))
    evidence = result.hits[0].evidence["location"]
    signal_cuts = [cuts(demo_index, s) for s in evidence]  # a concept of two signals: the mean of their cuts
    rule = {k: float(np.mean([c[k] for c in signal_cuts])) for k in signal_cuts[0]}
    for hit in result.hits:
        assert set(hit.evidence["location"]) == set(evidence)
        want = "strong" if hit.total <= rule["far"] else "likely" if hit.total <= rule["unlike"] else "weak"
        assert result.confidence(hit) == want, hit.path
    assert {result.confidence(h) for h in result.hits if h.path.startswith("campus_")} == {"weak"}
    assert result.no_match == (result.confidence(result.hits[0]) == "weak")
    labels = {h.get("confidence") for h in result.as_dict()["hits"]}
    assert labels <= {"strong", "likely", "weak"}  # one vocabulary: no far, unlike, alike or typical


@pytest.fixture
def old_index(demo_index, tmp_path):
    """The demo index as a catalog written before backgrounds were kept."""
    copy = tmp_path / ".convis"
    shutil.copytree(demo_index, copy)
    for name in ("catalog.duckdb", "snapshot.duckdb"):
        if (copy / name).is_file():
            with duckdb.connect(str(copy / name)) as db:
                db.execute("DROP TABLE IF EXISTS backgrounds")
                db.execute("UPDATE settings SET value = '1' WHERE key = 'schema_version'")
    return copy


def test_an_index_without_backgrounds_keeps_the_relative_rule_and_says_so(old_index):
    result = Engine(old_index).search(SearchRequest(CUP, 10))
    answer = result.as_dict()
    assert answer["calibration"] is None and answer["no_match"] is False
    assert any("relative to this query's own scores" in n and "convis index" in n for n in result.notices)
    assert {h.get("confidence") for h in answer["hits"]} <= {"strong", "likely", "weak"}


def test_the_table_page_and_explain_show_the_label_and_the_no_match_note(demo_index, tmp_path):
    page = tmp_path / "kayaks.html"
    shown = CliRunner().invoke(app, ["search", KAYAKS, "--index-dir", str(demo_index), "-k", "3", "--explain",
                                     "--html", str(page)], env={"COLUMNS": "200"})
    assert shown.exit_code == 0, shown.output
    assert "confidence" in shown.stdout and "│ weak" in shown.stdout
    assert "no clip matches this well; closest shown" in shown.stdout
    assert "random pairs of its units (36 pairs of 9 units)" in shown.stdout  # --explain
    html = page.read_text()
    assert 'class="note no-match"' in html and '<details class="confidence">' in html
    assert html.count('<span class="badge weak">weak</span>') == 3


def test_too_few_units_for_a_background_says_so_rather_than_to_index_again():
    from retrieval.search.calibration import no_background
    from retrieval.store.catalog.records import BackgroundRow

    few = {"efficientnet-lite0:x": BackgroundRow("efficientnet-lite0:x", 3, 3, (0.5,) * 8, 1)}
    said = no_background(["efficientnet-lite0:x"], few)
    assert "too few units (3)" in said and "convis index" not in said
    assert "run `convis index` again" in no_background(["efficientnet-lite0:x"], {})
