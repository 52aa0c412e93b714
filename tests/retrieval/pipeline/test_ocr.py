"""The ocr indexer: words drawn into example clips for a known time are read back (character error rate, time),
stored as timed lines of the file, found by keyword search; frames without text, of noise, 4K or of 500 lines
give no crash and bounded work."""

import shutil
import subprocess

import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageFont

from retrieval.api import Engine, SearchRequest
from retrieval.pipeline.settings import IndexSettings
from retrieval.store.catalog import Catalog

pytest.importorskip("rapidocr_onnxruntime")

FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf"
# clip -> (source clip, drawn text, from, to seconds); every clip is 4 s long
DRAWN = {"cup_sign.mp4": ("cup.mp4", "PELICAN HARBOUR", 0.5, 3.5),
         "campus_sign.mp4": ("campus_01.mp4", "ZEBRA CROSSING 42", 0.0, 1.5)}
SAMPLE_GAP = 1.0  # the ocr indexer reads 1 frame a second


def _edit_distance(a: str, b: str) -> int:
    row = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        prev, row[0] = row[0], i
        for j, cb in enumerate(b, 1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (ca != cb))
    return row[-1]


def _cer(read: str, truth: str) -> float:
    return _edit_distance(read, truth) / len(truth)


def _draw(source, target, text, start, end):
    drawn = (f"drawtext=fontfile={FONT}:text='{text}':fontsize=40:fontcolor=white:box=1:boxcolor=black@0.6:"
             f"x=(w-text_w)/2:y=h/4:enable='between(t,{start},{end})'")
    subprocess.run(["ffmpeg", "-v", "error", "-y", "-i", str(source), "-t", "4", "-vf", f"scale=480:-2,{drawn}",
                    "-an", "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", str(target)], check=True)


@pytest.fixture(scope="module")
def signs(tmp_path_factory, example_videos):
    """The drawn clips and one plain 4 s clip, indexed with EfficientNet-Lite0 and ocr (index dir returned)."""
    if shutil.which("ffmpeg") is None:
        pytest.skip("needs ffmpeg with drawtext")
    folder = tmp_path_factory.mktemp("ocr") / "videos"
    folder.mkdir()
    for name, (source, text, start, end) in DRAWN.items():
        _draw(example_videos / source, folder / name, text, start, end)
    subprocess.run(["ffmpeg", "-v", "error", "-y", "-i", str(example_videos / "campus_02.mp4"), "-t", "4", "-vf",
                    "scale=480:-2", "-an", "-c:v", "libx264", "-preset", "ultrafast", str(folder / "plain.mp4")],
                   check=True)
    index_dir = folder / ".convis"
    report = Engine(index_dir).index(folder, ["efficientnet-lite0", "ocr"], IndexSettings(workers=1))
    assert not report.failed
    return index_dir


def _lines(index_dir, path):
    with Catalog(index_dir / "catalog.duckdb") as catalog:
        return catalog.file_lines(path, ["ocr"])


@pytest.mark.parametrize("name", sorted(DRAWN))
def test_drawn_words_are_read_with_their_time(signs, name):
    _, text, start, end = DRAWN[name]
    lines = _lines(signs, name)
    best = min(lines, key=lambda x: _cer(x.text, text))
    assert _cer(best.text, text) <= 0.05, lines
    # merged over the sampled frames that showed it: its time within one sampled frame of the drawn time
    assert abs(best.start - start) <= SAMPLE_GAP and abs(best.end - end) <= SAMPLE_GAP and best.start < best.end
    assert best.origin.startswith("rapidocr:") and 0.5 < best.confidence <= 1
    x0, y0, x1, y1 = best.box
    assert 0 <= x0 < x1 <= 1 and 0.1 < y0 < y1 < 0.5  # drawn at a quarter of the height


def test_a_clip_without_text_is_indexed_with_no_lines(signs):
    assert _lines(signs, "plain.mp4") == []
    with Catalog(signs / "catalog.duckdb") as catalog:
        digest = catalog.db.execute("SELECT content_hash FROM files WHERE path = 'plain.mp4'").fetchone()[0]
        assert list(catalog.line_stamps(digest, "ocr")) == [_lines(signs, "cup_sign.mp4")[0].origin]


@pytest.mark.parametrize("word, clip", [("PELICAN", "cup_sign.mp4"), ("zebra", "campus_sign.mp4")])
def test_a_drawn_word_finds_its_clip_first(signs, word, clip):
    found = Engine(signs).search(SearchRequest(word, mode="keyword"))
    assert found.hits[0].path == clip


def test_a_second_run_reads_nothing_again(signs):
    with Catalog(signs / "catalog.duckdb") as catalog:
        before = catalog.db.execute("SELECT count(*) FROM line_runs").fetchone()[0]
    report = Engine(signs).index(signs.parent, ["efficientnet-lite0", "ocr"], IndexSettings(workers=1))
    assert report.indexed == 0 and report.unchanged == 3
    with Catalog(signs / "catalog.duckdb") as catalog:
        assert catalog.db.execute("SELECT count(*) FROM line_runs").fetchone()[0] == before



def test_a_run_without_indexers_named_reads_new_files_with_the_remembered_reader(signs, tmp_path, example_videos):
    from tests.indexes import copied_index

    folder = copied_index(signs.parent, tmp_path / "videos")
    _draw(example_videos / "box.mp4", folder / "box_sign.mp4", "OSPREY", 0.0, 3.0)
    report = Engine(folder / ".convis").index(folder, [], IndexSettings(workers=1))  # no -i: what earlier runs ran
    assert report.indexed == 1 and not report.failed
    assert any(_cer(x.text, "OSPREY") <= 0.05 for x in _lines(folder / ".convis", "box_sign.mp4"))

# -- bad frames, straight to the reader ------------------------------------------------------------
@pytest.fixture(scope="module")
def reader():
    from indexers.factory import create_indexer

    return create_indexer("ocr")


def test_frames_without_text_or_of_noise_give_no_lines(reader):
    noise = np.random.default_rng(0).integers(0, 256, (360, 640, 3), dtype=np.uint8)
    assert reader.read_frame(np.zeros((360, 640, 3), np.uint8)) == []
    assert reader.read_frame(noise) == []
    assert reader.read_frame(np.zeros((1, 1, 3), np.uint8)) == []


def _text_frame(size, lines, font_size):
    image = Image.new("RGB", size, (20, 20, 20))
    draw, font = ImageDraw.Draw(image), ImageFont.truetype(FONT, font_size)
    for x, y, text in lines:
        draw.text((x, y), text, font=font, fill="white")
    return np.asarray(image)


def test_a_frame_of_500_lines_is_capped(reader):
    from indexers.ocr import MOST_LINES

    lines = [(8 + 100 * (i % 10), 4 + 20 * (i // 10), f"r{i}") for i in range(500)]  # 50 rows of 10
    found = reader.read_frame(_text_frame((1010, 1004), lines, 14))
    assert 0 < len(found) <= MOST_LINES


def test_a_4k_frame_is_read_at_the_detectors_limit(reader):
    from indexers.ocr import READ_LONG_SIDE

    frame = _text_frame((3840, 2160), [(600, 800, "CONVIS LARGE PRINT")], 200)
    sizes = []
    detect = reader._engine.text_det.__call__

    def spy(image):
        sizes.append(image.shape[:2])
        return detect(image)

    reader._engine.text_det = spy
    try:
        found = reader.read_frame(frame)
    finally:
        del reader._engine.text_det
    assert [x.text for x in found] == ["CONVIS LARGE PRINT"]
    assert sizes and max(sizes[0]) <= READ_LONG_SIDE


# -- where the lines show: search --json, ls --json, export ------------------------------------------
def _cli(*args):
    from typer.testing import CliRunner

    from retrieval.cli.app import app

    result = CliRunner().invoke(app, [*map(str, args)])
    assert result.exit_code == 0, result.output
    return result.stdout


def test_a_search_shows_the_line_it_matched_with_time_and_box(signs):
    import json

    # no indexed signal compares text with clips (EfficientNet-Lite0): the default search answers by keyword
    found = json.loads(_cli("search", "pelican", "--index-dir", signs, "--json"))
    top = found["hits"][0]
    assert top["path"] == "cup_sign.mp4" and any("keyword" in n for n in found["notices"])
    (line,) = top["lines"]
    assert line["source"] == "ocr" and line["text"] == "PELICAN HARBOUR" and line["start"] < line["end"]
    assert len(line["box"]) == 4 and line["confidence"] > 0.5
    table = _cli("search", "pelican", "--index-dir", signs)
    assert "PELICAN HARBOUR" in table and "ocr" in table


def test_ls_json_shows_each_units_lines(signs):
    import json

    files = {f["path"]: f for f in json.loads(_cli("ls", "--index-dir", signs, "--json"))["files"]}
    shown = [x["text"] for u in files["campus_sign.mp4"]["units"] for x in u.get("lines", [])]
    assert shown == [x.text for x in _lines(signs, "campus_sign.mp4")] and shown
    assert all("lines" not in u for u in files["plain.mp4"]["units"])


def test_the_export_holds_the_text_lines(signs, tmp_path):
    import pyarrow.parquet as pq

    _cli("export", "--out", tmp_path / "out", "--index-dir", signs)
    rows = pq.read_table(tmp_path / "out" / "text_lines.parquet").to_pylist()
    assert {(r["path"], r["text"]) for r in rows} == \
        {(p, x.text) for p in DRAWN for x in _lines(signs, p)}


def test_the_text_indexer_embeds_the_lines_as_a_signal_of_their_own(signs, tmp_path):
    from tests.indexes import copied_index

    index_dir = copied_index(signs.parent, tmp_path / "videos") / ".convis"
    report = Engine(index_dir).index(index_dir.parent, ["efficientnet-lite0", "ocr", "text"], IndexSettings(workers=1))
    assert report.indexed == 0 and "ocr" in report.description_signals  # same bytes: nothing read again
    with Catalog(index_dir / "catalog.duckdb") as catalog:
        (signal,) = [row.signal for row in catalog.description_signals() if row.concept == "ocr"]
        assert signal.endswith("#ocr") and len(catalog.vector_sources(signal)) == len(DRAWN)
    found = Engine(index_dir).search(SearchRequest("a harbour for pelicans", concept="ocr"))
    assert found.hits[0].path == "cup_sign.mp4"
