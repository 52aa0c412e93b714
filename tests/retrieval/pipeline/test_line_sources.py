"""Timed-line sources: one registry, one remembered setting (the catalog's migrations move an older index's two
settings into it), one freshness rule."""

import json

import pytest

from retrieval.pipeline import line_sources
from retrieval.pipeline.line_sources import is_current, remember, remembered, spec_of, split_specs
from retrieval.store.catalog import Catalog


@pytest.fixture
def catalog(tmp_path):
    with Catalog(tmp_path / "catalog.duckdb") as cat:
        yield cat


def test_an_older_index_keeps_its_readers_and_its_recogniser(tmp_path):
    path = tmp_path / "catalog.duckdb"
    with Catalog(path) as catalog:  # as a release before the one setting wrote them, schema "11"
        catalog.set_setting("line_readers", json.dumps(["ocr"]))
        catalog.set_setting("speech", "speech:tiny")
        catalog.set_setting("schema_version", "11")
    with Catalog(path) as catalog:  # the next writer migrates them into the one setting
        assert remembered(catalog) == {"ocr": ["ocr"], "speech": ["speech:tiny"]}
        assert line_sources.frame_reader_specs(catalog) == ["ocr"] and spec_of(catalog, "speech") == "speech:tiny"
        assert catalog.setting("line_readers") is None and catalog.setting("speech") is None
        remember(catalog, {"speech": ["speech:base"]})
        assert json.loads(catalog.setting(line_sources.SETTING)) == {"ocr": ["ocr"], "speech": ["speech:base"]}


def test_a_recogniser_asked_for_replaces_the_last_and_readers_add_up(catalog):
    remember(catalog, {})
    assert catalog.setting(line_sources.SETTING) is None  # nothing asked: nothing written
    remember(catalog, {"ocr": ["ocr"], "speech": ["speech"]})
    remember(catalog, {"ocr": ["ocr", "rapidocr"], "speech": ["speech:tiny"]})
    assert remembered(catalog) == {"ocr": ["ocr", "rapidocr"], "speech": ["speech:tiny"]}
    catalog.set_setting(line_sources.SETTING, "{not json")
    assert remembered(catalog) == {}  # damaged by hand: the next run naming a source writes it whole


def test_pass_sources_are_split_off_the_indexers_the_last_one_winning():
    assert split_specs(["dinov2", "speech", "ocr", "speech:tiny"]) == (["dinov2", "ocr"], {"speech": "speech:tiny"})
    assert split_specs(["speechless"]) == (["speechless"], {})


@pytest.mark.parametrize("stamps, origin, stamp, current", [
    ({"rapidocr:1": "a"}, "rapidocr:1", "a", True),
    ({"rapidocr:1": "a"}, "rapidocr:1", "b", False),  # the reader or its settings changed
    ({}, "whisper:tiny", None, False),
    ({"whisper:tiny": "no voice"}, "whisper:tiny", None, True),  # any stamp: heard, silence too
    ({"talk.srt": "10:1.0"}, "talk.srt", "10:1.5", False),  # the sidecar changed
    ({"stream:2": "streams-1", "talk.srt": "1:1"}, "stream:", "streams-1", True),  # every origin it begins
    ({"stream:none": "streams-0"}, "stream:", "streams-1", False),
])
def test_one_freshness_rule(stamps, origin, stamp, current):
    assert is_current(stamps, origin, stamp) is current
