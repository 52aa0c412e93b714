"""Timed text lines in the catalog: kept by the file's bytes, read back by the units their time overlaps, replaced
whole per read, and part of each unit's keyword text."""

import pytest

from retrieval.api import Engine, SearchRequest
from retrieval.store.catalog import Catalog
from retrieval.store.catalog.records import TimedLine
from retrieval.store.keyword.unit_texts import stamp, unit_texts
from tests.indexes import indexed_copies


@pytest.fixture(scope="module")
def two_clips(tmp_path_factory):
    """Two example clips cut into 2-second units (EfficientNet-Lite0)."""
    videos = indexed_copies(tmp_path_factory.mktemp("lines"), ("cup.mp4", "box.mp4"), ["efficientnet-lite0"],
                            segment_seconds=2.0)
    return videos / ".convis"


@pytest.fixture
def catalog(two_clips, tmp_path):
    from tests.indexes import copied_index

    index_dir = copied_index(two_clips.parent, tmp_path / "videos") / ".convis"
    with Catalog(index_dir / "catalog.duckdb") as opened:
        yield opened


def _units(catalog, path):
    return catalog.db.execute("SELECT u.unit_id, u.start_s, u.end_s FROM units u JOIN files f USING (file_id) "
                              "WHERE f.path = ? ORDER BY u.segment", [path]).fetchall()


def _hash(catalog, path):
    return catalog.db.execute("SELECT content_hash FROM files WHERE path = ?", [path]).fetchone()[0]


def test_a_line_belongs_to_every_unit_its_time_overlaps(catalog):
    units = _units(catalog, "cup.mp4")
    assert len(units) >= 2
    (first, _, cut), (second, _, _) = units[0][:3], units[1][:3]
    lines = [TimedLine("subtitle", "cup.srt", cut - 0.5, cut + 0.5, "across the cut"),
             TimedLine("ocr", "rapidocr", cut, cut, "SCORE 2-1", 0.9, (0.1, 0.2, 0.3, 0.4)),  # one frame, at the cut
             TimedLine("subtitle", "cup.srt", 0.1, 0.4, "early")]
    catalog.replace_lines(_hash(catalog, "cup.mp4"), "subtitle", "cup.srt", "10:1", [lines[0], lines[2]])
    catalog.replace_lines(_hash(catalog, "cup.mp4"), "ocr", "rapidocr", "r1", [lines[1]])
    got = catalog.unit_lines([first, second])
    assert [x.text for x in got[first]] == ["early", "across the cut"]
    assert [x.text for x in got[second]] == ["across the cut", "SCORE 2-1"]  # by time; the frame's at its start
    assert got[second][1].box == (0.1, 0.2, 0.3, 0.4) and got[second][1].confidence == 0.9
    assert [x.text for x in catalog.unit_lines([second], sources=["ocr"])[second]] == ["SCORE 2-1"]
    assert [x.text for x in catalog.file_lines("cup.mp4")] == ["early", "across the cut", "SCORE 2-1"]
    assert catalog.file_lines("box.mp4") == [] and catalog.unit_lines([]) == {}


def test_a_read_replaces_its_lines_whole_and_records_an_empty_read(catalog):
    digest = _hash(catalog, "box.mp4")
    catalog.replace_lines(digest, "subtitle", "box.srt", "1:1", [TimedLine("subtitle", "box.srt", 0, 1, "old")])
    catalog.replace_lines(digest, "subtitle", "box.srt", "2:2", [TimedLine("subtitle", "box.srt", 0, 1, "new")])
    catalog.replace_lines(digest, "ocr", "rapidocr", "r1", [])  # read, nothing on screen: not read again
    assert [x.text for x in catalog.file_lines("box.mp4")] == ["new"]
    assert catalog.line_stamps(digest, "subtitle")["box.srt"] == "2:2"  # beside the run's own read of streams
    assert catalog.line_stamps(digest, "ocr") == {"rapidocr": "r1"}
    catalog.forget_lines(digest, "subtitle", "box.srt")
    assert catalog.file_lines("box.mp4") == [] and "box.srt" not in catalog.line_stamps(digest, "subtitle")


def test_lines_join_the_units_keyword_text_and_change_its_stamp(catalog):
    before = stamp(catalog)
    ids, texts = unit_texts(catalog)
    plain = dict(zip(ids, texts, strict=True))
    first = _units(catalog, "box.mp4")[0][0]
    catalog.replace_lines(_hash(catalog, "box.mp4"), "speech", "whisper", "w1",
                          [TimedLine("speech", "whisper", 0.2, 0.9, "Kipchoge crosses the line")])
    ids, texts = unit_texts(catalog)
    now = dict(zip(ids, texts, strict=True))
    assert now[first].split() == plain[first].split() + ["Kipchoge", "crosses", "the", "line"]
    assert {i: t for i, t in now.items() if i != first} == {i: t for i, t in plain.items() if i != first}
    after = stamp(catalog)
    assert after.digest != before.digest and after.described and after.units == before.units


def test_a_keyword_search_finds_a_unit_by_its_lines(two_clips, tmp_path):
    from tests.indexes import copied_index

    index_dir = copied_index(two_clips.parent, tmp_path / "videos") / ".convis"
    with Catalog(index_dir / "catalog.duckdb") as opened:
        opened.replace_lines(_hash(opened, "cup.mp4"), "ocr", "rapidocr", "r1",
                             [TimedLine("ocr", "rapidocr", 2.5, 2.5, "PS-2 FINAL")])
    found = Engine(index_dir).search(SearchRequest("PS-2", mode="keyword"))
    assert [h.path for h in found.hits] == ["cup.mp4"]


def test_a_line_that_cannot_be_stored_costs_that_line_alone(catalog):
    digest = _hash(catalog, "cup.mp4")
    lines = [TimedLine("subtitle", "cup.srt", i * 0.1, i * 0.1 + 0.05, f"cue {i}") for i in range(5_000)]
    lines[7] = TimedLine("subtitle", "cup.srt", 0.7, 0.75, "caf\udce9")  # a lone surrogate: no UTF-8 for it
    lines[9] = TimedLine("subtitle", "cup.srt", "soon", 1.0, "a time that is no number")
    assert catalog.replace_lines(digest, "subtitle", "cup.srt", "1:1", lines) == 2
    stored = catalog.file_lines("cup.mp4", ["subtitle"])
    assert len(stored) == 4_998 and [x.text for x in stored[:8]] == [f"cue {i}" for i in (0, 1, 2, 3, 4, 5, 6, 8)]
    assert catalog.line_stamps(digest, "subtitle")["cup.srt"] == "1:1"
    assert catalog.db.execute("SELECT lines FROM line_runs WHERE origin = 'cup.srt'").fetchone() == (4_998,)


def test_a_read_of_many_lines_keeps_every_field_in_order(catalog):
    digest = _hash(catalog, "box.mp4")
    lines = [TimedLine("ocr", "rapidocr", i / 100, i / 100, f"SIGN {i}", 0.5, (0.1, 0.2, 0.3, 0.4), "en")
             for i in range(20_000)]
    assert catalog.replace_lines(digest, "ocr", "rapidocr", "r1", lines) == 0
    assert catalog.file_lines("box.mp4", ["ocr"]) == lines
