"""The transcript under the player: ``GET /lines`` gives a file's timed lines of every source by time, and in the
app a click on a line seeks the player to it."""

import shutil

import pytest
from fastapi.testclient import TestClient

from retrieval.api import Engine
from retrieval.pipeline.settings import IndexSettings
from retrieval.serve.routes.lines import LINES_PAGE
from retrieval.serve.server import create_app
from retrieval.store.catalog import Catalog
from retrieval.store.catalog.records import TimedLine
from tests.retrieval.serve.browser import example_folder, needs_chromium, needs_ffmpeg, serving

SRT = "1\n00:00:00,500 --> 00:00:01,500\nthe cup appears\n\n2\n00:00:03,000 --> 00:00:04,250\nit turns slowly\n"


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory):
    videos = example_folder(tmp_path_factory.mktemp("transcript"), ("cup.mp4", "box.mp4"))
    (videos / "cup.en.srt").write_text(SRT, encoding="utf-8")
    Engine(videos / ".convis").index(videos, ["efficientnet-lite0"], IndexSettings(workers=1))
    with Catalog(videos / ".convis" / "catalog.duckdb") as catalog:
        digest = catalog.file_states()["cup.mp4"].content_hash
        catalog.replace_lines(digest, "ocr", "rapidocr", "r1", [TimedLine("ocr", "rapidocr", 2.0, 2.0, "MUG 42")])
    return videos / ".convis"


def test_lines_lists_every_source_by_time(index_dir):
    with TestClient(create_app(index_dir), base_url="http://localhost") as client:
        lines = client.get("/lines/cup.mp4").json()["lines"]
        assert [(x["source"], x["origin"], x["start"], x["end"], x["text"], x["language"]) for x in lines] == [
            ("subtitle", "cup.en.srt", 0.5, 1.5, "the cup appears", "en"),
            ("ocr", "rapidocr", 2.0, 2.0, "MUG 42", None),
            ("subtitle", "cup.en.srt", 3.0, 4.25, "it turns slowly", "en")]
        assert client.get("/lines/box.mp4").json() == {"ref": "box.mp4", "lines": [], "next_start": None}
        assert client.get("/lines/missing.mp4").status_code == 404
        assert client.get("/lines/..%2Fsecret.mp4").status_code in (400, 403, 404, 422)


def test_a_long_transcript_comes_a_bounded_page_at_a_time_and_the_pages_hold_every_line_once(index_dir, tmp_path):
    index = tmp_path / ".convis"
    shutil.copytree(index_dir, index)
    # 5,000 lines, three of them at each instant: pages end between instants, never inside one
    lines = [TimedLine("ocr", "rapidocr", float(i // 3), float(i // 3), f"line {i}") for i in range(5000)]
    with Catalog(index / "catalog.duckdb") as catalog:
        catalog.replace_lines(catalog.file_states()["cup.mp4"].content_hash, "ocr", "rapidocr", "r2", lines)
    seen, start = [], 0.0
    with TestClient(create_app(index), base_url="http://localhost") as client:
        assert client.get("/lines/cup.mp4?limit=2001").status_code == 422
        while start is not None:
            answer = client.get(f"/lines/cup.mp4?start={start}").json()
            assert 0 < len(answer["lines"]) <= LINES_PAGE
            seen += [x["text"] for x in answer["lines"] if x["source"] == "ocr"]
            start = answer["next_start"]
    assert sorted(seen) == sorted(x.text for x in lines)


@needs_chromium
@needs_ffmpeg
def test_a_click_on_a_line_seeks_the_player(index_dir, page):
    with serving(index_dir) as url:
        page.goto(url + "/?anchor=box.mp4&c=location%3D1&k=10")
        page.wait_for_selector("body[data-ready='1']")
        page.click("#hits li.hit[data-path='cup.mp4'] .poster")
        card = "#hits li.hit[data-path='cup.mp4']"
        page.wait_for_selector(f"{card} .transcript li.line")
        texts = page.eval_on_selector_all(f"{card} .transcript li.line .text", "xs => xs.map((x) => x.textContent)")
        assert texts == ["the cup appears", "MUG 42", "it turns slowly"]
        page.eval_on_selector(f"{card} video", "v => { v.muted = true; }")
        page.click(f"{card} .transcript li.line[data-start='3']")
        page.wait_for_function(f"""() => {{ const v = document.querySelector("{card} video");
                                   return v.currentTime >= 3.0 && v.currentTime < 4.0; }}""")
        assert not page.errors, page.errors
