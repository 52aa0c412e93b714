"""How a line reader's frame reads become timed lines: a line on consecutive sampled frames is merged, a frame
without it ends it, the recogniser's dropped spaces do not split it, another place on screen is another line."""

import pytest

from indexers.ocr import FrameText
from retrieval.api import Engine
from retrieval.pipeline import frame_lines
from retrieval.pipeline.frame_lines import timed_lines
from retrieval.pipeline.settings import IndexSettings
from retrieval.store.catalog import Catalog
from retrieval.store.catalog.records import TimedLine

TOP, BOTTOM = (0.1, 0.1, 0.5, 0.2), (0.1, 0.8, 0.5, 0.9)


def _read(text, box=TOP, confidence=0.9):
    return FrameText(text, confidence, box)


def test_a_line_on_consecutive_frames_is_one_line_until_a_frame_lacks_it():
    reads = [(0.0, [_read("GATE 4")]), (1.0, [_read("GATE4", confidence=0.95)]), (2.0, [_read("gate 4")]),
             (3.0, []), (4.0, [_read("GATE 4")])]
    lines = timed_lines(reads, "ocr", "rapidocr:x")
    assert [(x.start, x.end, x.text, x.confidence) for x in lines] == [(0.0, 2.0, "GATE 4", 0.95),
                                                                       (4.0, 4.0, "GATE 4", 0.9)]


def test_the_same_text_elsewhere_on_screen_is_another_line():
    reads = [(0.0, [_read("EXIT", TOP)]), (1.0, [_read("EXIT", BOTTOM)])]
    assert [(x.start, x.end, x.box) for x in timed_lines(reads, "ocr", "o")] == [(0.0, 0.0, TOP), (1.0, 1.0, BOTTOM)]


def test_a_new_reader_version_replaces_the_lines_of_the_old_one(tmp_path):
    from types import SimpleNamespace

    from retrieval.pipeline.frame_lines import store_reads
    from retrieval.store.catalog import Catalog

    old = SimpleNamespace(name="ocr", origin="rapidocr:1.3", stamp="rapidocr:1.3;rules")
    new = SimpleNamespace(name="ocr", origin="rapidocr:1.4", stamp="rapidocr:1.4;rules")
    with Catalog(tmp_path / "catalog.duckdb") as cat:
        store_reads(cat, "abc", old, [(0.0, [_read("GATE 4")])])
        store_reads(cat, "abc", new, [(0.0, [_read("GATE 4")])])
        stored = cat.db.execute("SELECT origin, text FROM text_lines WHERE content_hash = 'abc'").fetchall()
        assert stored == [("rapidocr:1.4", "GATE 4")]  # the old version's read is not a second copy of the line
        assert cat.line_stamps("abc", "ocr") == {"rapidocr:1.4": new.stamp}


def test_a_read_line_the_catalog_cannot_store_is_counted_in_the_report(tmp_path, video_folder, monkeypatch):
    """An on-screen line that is not valid Unicode costs itself: the file's other lines are stored and the run's
    report counts it (``ocr_unstored``, a note)."""
    pytest.importorskip("rapidocr_onnxruntime")
    real = frame_lines.timed_lines

    def with_a_bad_line(reads, source, origin):
        return [*real(reads, source, origin), TimedLine(source, origin, 0.0, 1.0, "good words"),
                TimedLine(source, origin, 1.0, 2.0, "bad \ud800")]

    monkeypatch.setattr(frame_lines, "timed_lines", with_a_bad_line)
    folder = tmp_path / "one"
    folder.mkdir()
    (folder / "cup.mp4").write_bytes((video_folder / "cup.mp4").read_bytes())
    engine = Engine(tmp_path / "index")
    report = engine.index(folder, ["efficientnet-lite0", "ocr"], IndexSettings(workers=1))
    assert report.ocr_unstored == 1 and report.as_dict()["ocr_unstored"] == 1
    assert any(note.startswith("ocr: 1 line(s) the catalog cannot store") for note in report.notes)
    with Catalog(engine.catalog_path, read_only=True) as cat:
        assert "good words" in [x.text for x in cat.file_lines("cup.mp4", ("ocr",))]
