"""The keyword index: stemmed terms, stop words ignored, and each hit's IDF-weighted coverage of the query; an
index saved by an older tokeniser is rebuilt on the next search."""

import json
import shutil

import bm25s
import numpy as np
import pytest

from retrieval.store.catalog import Catalog
from retrieval.store.keyword import index as keyword_index
from retrieval.store.keyword import sync
from retrieval.store.keyword.index import KeywordIndex, OlderFormat, terms
from retrieval.store.keyword.unit_texts import Stamp

TEXTS = {1: "cyclists ride bicycles along a busy street", 2: "a hand holds a cup", 3: "a hand turns a box",
         4: "people walk across the square", 5: "a man walks on the street in a suit"}


def _index(texts: dict[int, str]) -> KeywordIndex:
    model = bm25s.BM25()
    model.index([terms(t) for t in texts.values()], show_progress=False)
    return KeywordIndex(np.asarray(list(texts), dtype=np.int64), Stamp(len(texts), "0", True), model)


def test_a_singular_word_finds_its_plural_and_shows_the_word_as_asked():
    hits = _index(TEXTS).search("bicycle", 5)
    assert [h.unit_id for h in hits] == [1] and hits[0].matched == ("bicycle",) and hits[0].coverage == 1.0


def test_stop_words_find_nothing():
    assert _index(TEXTS).search("the a of in on", 5) == []


def test_coverage_weighs_each_query_term_by_its_idf():
    hits = {h.unit_id: h for h in _index(TEXTS).search("a man in a suit on the street", 5)}
    assert hits[5].coverage == pytest.approx(1.0)  # man, suit, street: every term
    assert 0 < hits[1].coverage < 0.5  # street alone, held by two units: the least telling term
    rare = {h.unit_id: h for h in _index(TEXTS).search("suit street", 5)}
    assert rare[5].coverage == 1.0 and rare[1].coverage < 0.5
    unknown = _index(TEXTS).search("street zqxv", 5)  # a word no unit holds weighs most: it lowers every coverage
    assert all(h.coverage < 0.5 for h in unknown)


def _build_like_before(catalog: Catalog, index_dir, monkeypatch) -> None:
    """Save the keyword index as the unstemmed tokeniser (format 1) saved it."""
    with monkeypatch.context() as patched:
        patched.setattr(keyword_index, "stem", lambda word: word)
        patched.setattr(keyword_index, "FORMAT", 1)
        KeywordIndex.build(catalog).save(index_dir)
    assert json.loads((index_dir / "keyword" / "state.json").read_text())["format"] == 1


def test_an_index_saved_by_an_older_tokeniser_is_rebuilt_on_the_next_search(demo_index, tmp_path, monkeypatch):
    index_dir = tmp_path / ".convis"
    shutil.copytree(demo_index, index_dir)
    with Catalog(index_dir / "catalog.duckdb") as catalog:
        _build_like_before(catalog, index_dir, monkeypatch)
        with pytest.raises(OlderFormat):
            KeywordIndex.load(index_dir)
        notices: list[str] = []
        fresh = sync.current(catalog, index_dir, notices)
        ids = {u.unit_id: u.path for u in catalog.units(fresh.unit_ids.tolist()).values()}
    assert notices == ["keyword index of an older format (a changed tokeniser): rebuilt from the catalog"]
    assert [ids[h.unit_id] for h in fresh.search("bicycle", 3)][:1] == ["bikes.mp4"]
    assert KeywordIndex.load(index_dir).stamp == fresh.stamp  # saved: the next search reads it
