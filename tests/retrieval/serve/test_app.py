"""The web app in headless Chromium, on example clips cut into 10 s units, with an AVI browsers cannot play and a
broken file: browse, more like this, group by video, evidence, compare, the URL as state, previews, failed
uploads and index management. Each walk writes screenshots and prints where."""

import base64
import io
import json
import re
from pathlib import Path

import av
import pytest

from retrieval.media.scan import content_hash
from tests.paths import EXAMPLES
from tests.retrieval.serve.browser import ALL_LOADED, collection, needs_chromium, needs_ffmpeg, serving

pytestmark = [needs_chromium, needs_ffmpeg]
HITS = "#hits li.hit"


@pytest.fixture(scope="module")
def videos(app_videos):
    return app_videos


@pytest.fixture(scope="module")
def app_url(videos):
    with serving(videos / ".convis") as url:
        yield url


def ready(page, url: str) -> None:
    page.goto(url)
    page.wait_for_selector("body[data-ready='1']")


def paths(page, selector: str = HITS) -> list[str]:
    return page.eval_on_selector_all(selector, "items => items.map((li) => li.dataset.path)")


def shoot(page, folder: Path, name: str, shots: list[Path]) -> None:
    shots.append(folder / f"{len(shots) + 1}-{name}.png")
    page.screenshot(path=str(shots[-1]), full_page=False)


def test_browse_more_like_this_group_evidence_compare(app_url, page, tmp_path):
    shots = []
    ready(page, app_url + "/")
    # the collection: every unit of the indexed files, with their spans
    page.wait_for_function(ALL_LOADED, arg="#grid img")
    units = page.eval_on_selector_all("#grid li.unit", "cards => cards.map((c) => [c.dataset.path, c.dataset.start])")
    assert sorted(units) == sorted([["campus_01.mp4", "0"], ["campus_01.mp4", "10"], ["campus_02.mp4", "0"],
                                    ["campus_02.mp4", "10"], ["box.mp4", "0"], ["box.mp4", "10"], ["cup.mp4", "0"],
                                    ["more/bikes_old.avi", "0"]])
    assert "1-8 of 8 units" in page.inner_text("#collection-meta") and "1 failed" in page.inner_text("#collection-meta")
    shoot(page, tmp_path, "collection", shots)
    page.select_option("#file-status", "failed")
    page.wait_for_selector("#failed-list li")
    assert "broken.mp4" in page.inner_text("#failed-list") and "not a" in page.inner_text("#failed-list")
    page.select_option("#file-status", "ok")
    page.select_option("#folder", "more")
    page.wait_for_function("() => document.querySelectorAll('#grid li.unit').length === 1")
    assert paths(page, "#grid li.unit") == ["more/bikes_old.avi"] and "folder=more" in page.url
    page.select_option("#folder", "*")
    page.wait_for_function("() => document.querySelectorAll('#grid li.unit').length === 8")

    # more like this on the second unit of campus_01: the anchor is that span, the file's other unit can be a result
    page.click("#grid li.unit[data-path='campus_01.mp4'][data-start='10'] button.more")
    page.click("#grid li.unit[data-path='campus_01.mp4'][data-start='10'] .chooser button[type=submit]")  # location
    page.wait_for_selector(HITS)
    assert "anchor=campus_01.mp4" in page.url and "start=10" in page.url and "end=20" in page.url
    assert page.input_value("#start") == "10" and page.input_value("#end") == "20"
    assert page.inner_text("#anchor-span") == "0:10.0-0:20.0"
    found = page.eval_on_selector_all(HITS, "items => items.map((li) => li.querySelector('.time').textContent + ' ' "
                                            "+ li.dataset.path)")
    assert "0:00.0-0:10.0 campus_01.mp4" in found and "0:10.0-0:20.0 campus_01.mp4" not in found
    assert sorted(paths(page)[:3]) == ["campus_01.mp4", "campus_02.mp4", "campus_02.mp4"]
    assert "Bars span this query's scores" in page.inner_text("#scale-note")
    page.wait_for_function(ALL_LOADED, arg="#hit-1 img.poster-img, #hit-2 img.poster-img")
    shoot(page, tmp_path, "more-like-this", shots)

    # grouped by video: one card per file, its matching spans on the file's timeline
    page.check("#group-video")
    page.wait_for_selector("#hits li.video-group")
    groups = paths(page, "#hits > li.video-group")
    assert len(groups) == len(set(groups)) == len(set(found_path.split(" ")[1] for found_path in found))
    assert page.eval_on_selector("li.video-group[data-path='campus_02.mp4']",
                                 "g => g.querySelectorAll('.timeline .span').length") == 2
    assert "group=video" in page.url
    page.click("li.video-group[data-path='campus_02.mp4'] .timeline .span >> nth=0")
    assert page.eval_on_selector("li.video-group[data-path='campus_02.mp4'] details", "d => d.open")
    shoot(page, tmp_path, "by-video", shots)
    page.check("#group-flat")

    # evidence: the frames the signal saw, the caption and descriptions, which signal scored the concept
    page.click("#hit-1 details.evidence summary")
    page.wait_for_selector("#hit-1 .evidence-body table.scored-by")
    page.wait_for_function(ALL_LOADED, arg="#hit-1 .evidence-body img")
    evidence = page.inner_text("#hit-1 .evidence-body")
    assert "efficientnet-lite0" in evidence and "Caption" in evidence and "campus" in evidence.lower()
    assert page.eval_on_selector_all("#hit-1 .evidence-body img", "imgs => imgs.length") >= 4
    page.locator("#hit-1").screenshot(path=str(tmp_path / "evidence.png"))
    shots.append(tmp_path / "evidence.png")

    # compare: both clips, playing together
    page.click("#hit-2 .hit-head")
    page.wait_for_selector("#compare:not([hidden]) #compare-scores .scores")
    assert "view=compare" in page.url
    page.wait_for_function("() => [...document.querySelectorAll('#compare video')].every((v) => v.readyState >= 1)")
    page.click("#play-both")
    page.wait_for_function("() => [...document.querySelectorAll('#compare video')].every((v) => !v.paused && "
                           "v.currentTime > 0)")
    shoot(page, tmp_path, "compare", shots)
    page.eval_on_selector("#clip-a video", "v => v.pause()")  # pausing one pauses the other
    page.wait_for_function("() => [...document.querySelectorAll('#compare video')].every((v) => v.paused)")
    print("\nscreenshots: " + " ".join(map(str, shots)))
    assert not page.errors, page.errors


def test_the_url_holds_the_state_reload_and_back_restore_it(app_url, page):
    ready(page, app_url + "/?anchor=box.mp4&c=main-objects%3D0.6&c=location%3D0.4&k=5&group=video")
    page.wait_for_selector("#hits li.video-group")
    grouped = paths(page, "#hits > li.video-group")
    assert page.is_checked("#group-video") and page.input_value("#k") == "5"
    assert [page.input_value(f"#concepts .concept-row:nth-child({i}) .name") for i in (1, 2)] == \
        ["main-objects", "location"]
    page.reload()
    page.wait_for_selector("#hits li.video-group")
    assert paths(page, "#hits > li.video-group") == grouped  # reload: the same results, the same grouping
    page.check("#group-flat")
    page.wait_for_selector("#hits > li.hit")
    flat = paths(page)
    page.click("#hit-1 .hit-head")
    page.wait_for_selector("#compare:not([hidden])")
    page.go_back()
    page.wait_for_selector("#results:not([hidden]) #hits > li.hit")
    assert paths(page) == flat and page.is_hidden("#compare") and page.is_checked("#group-flat")
    assert not page.errors, page.errors


def test_an_avi_result_plays_its_h264_preview(app_url, videos, page, tmp_path):
    ready(page, app_url + "/?anchor=cup.mp4&c=location%3D1&k=10")
    page.click(f"{HITS}[data-path='more/bikes_old.avi'] .poster")  # a player only when asked for
    page.wait_for_selector(f"{HITS}[data-path='more/bikes_old.avi'] video")
    video = f"{HITS}[data-path='more/bikes_old.avi'] video"
    assert page.get_attribute(video, "src").startswith("/previews/more/bikes_old.avi#t=")
    page.wait_for_function(f"() => document.querySelector(\"{video}\").readyState >= 1", timeout=120_000)
    assert page.eval_on_selector(video, "v => v.videoWidth") > 0
    assert page.eval_on_selector(video, "v => v.duration") == pytest.approx(10, abs=0.5)
    made = list((videos / ".convis" / "previews").glob("*.mp4"))  # made once, kept in the index (box.mp4's too)
    assert (videos / ".convis" / "previews" / f"{content_hash(videos / 'more' / 'bikes_old.avi')}.mp4") in made
    page.locator(f"{HITS}[data-path='more/bikes_old.avi']").first.screenshot(path=str(tmp_path / "avi.png"))
    print(f"\nscreenshot: {tmp_path / 'avi.png'}")
    assert not page.errors, page.errors


def test_a_failed_upload_clears_the_results_and_says_one_readable_line(app_url, page, tmp_path):
    ready(page, app_url + "/?anchor=cup.mp4&c=location%3D1&k=3")
    page.wait_for_selector(HITS)
    assert page.inner_text("#anchor-name") == "cup.mp4"
    bad = tmp_path / "holiday.mp4"
    bad.write_bytes(b"this is not a video" * 100)
    page.set_input_files("#upload", str(bad))
    page.wait_for_selector("#status.error")
    line = page.inner_text("#status")
    assert line.startswith("upload failed: holiday.mp4 is not a video this server can decode")
    assert "\n" not in line and str(tmp_path) not in line and "/tmp" not in line and ".part" not in line
    assert page.is_hidden("#results") and page.inner_text("#anchor-name") == ""
    assert page.eval_on_selector_all(HITS, "items => items.length") == 0
    assert not page.errors, page.errors


def test_writes_are_refused_without_allow_writes(app_url, page):
    ready(page, app_url + "/?view=collection")
    assert page.is_hidden("#manage")  # a read-only server shows no panel of controls it would refuse
    assert page.eval_on_selector_all("button.remove-file", "b => b.length") == 0
    answers = page.evaluate("""async () => Promise.all([
        fetch('/index/runs', {method: 'POST', headers: {'Content-Type': 'application/json'}, body: '{}'}),
        fetch('/files/cup.mp4', {method: 'DELETE'})].map(async (r) => { const a = await r;
        return [a.status, (await a.json()).error]; }))""")
    assert [status for status, _ in answers] == [403, 403]
    assert all("convis serve --allow-writes" in error for _, error in answers)


@pytest.mark.slow
def test_clips_are_added_and_removed_from_the_app(tmp_path, browser):
    videos = collection(tmp_path)
    page = browser.new_page(viewport={"width": 1280, "height": 1000})
    page.set_default_timeout(30_000)
    with serving(videos / ".convis", allow_writes=True) as url:
        ready(page, url + "/?view=collection")
        assert not page.is_disabled("#add-files")
        page.fill("#add-folder", "new")
        page.set_input_files("#add-files", str(EXAMPLES / "bigbuckbunny.mp4"))
        page.wait_for_selector("#job:not([hidden])")
        page.wait_for_function("() => /^done: /.test(document.querySelector('#job-text').textContent)",
                               timeout=600_000)
        assert page.inner_text("#job-text").startswith("done: 1 indexed, ")  # and the folder's broken file
        page.wait_for_selector("#grid li.unit[data-path='new/bigbuckbunny.mp4']")
        assert (videos / "new" / "bigbuckbunny.mp4").is_file()
        assert re.search(r"6 files", page.inner_text("#root"))
        page.screenshot(path=str(tmp_path / "added.png"))
        page.on("dialog", lambda dialog: dialog.accept())
        page.click("#grid li.unit[data-path='new/bigbuckbunny.mp4'] button.remove-file")
        page.wait_for_function("() => !document.querySelector(\"#grid li.unit[data-path='new/bigbuckbunny.mp4']\")")
        assert (videos / "new" / "bigbuckbunny.mp4").is_file()  # out of the index, still on disk
        assert "removed new/bigbuckbunny.mp4" in page.inner_text("#status")
        print(f"\nscreenshot: {tmp_path / 'added.png'}")


def test_results_export_as_csv_json_and_a_gallery_that_embeds_its_clips(app_url, page):
    ready(page, app_url + "/?anchor=cup.mp4&c=location%3D1&k=3")
    page.wait_for_selector(HITS)
    shown = paths(page)
    with page.expect_download() as csv_file:
        page.click("#export-csv")
    rows = [line.split(",") for line in Path(csv_file.value.path()).read_text().splitlines()]
    assert rows[0][:7] == ["rank", "path", "start", "end", "total", "confidence", "z"] and rows[0][7] == "location"
    assert [row[1] for row in rows[1:]] == shown and csv_file.value.suggested_filename == "convis-cup.csv"
    with page.expect_download() as json_file:
        page.click("#export-json")
    exported = json.loads(Path(json_file.value.path()).read_text())
    assert [hit["path"] for hit in exported["hits"]] == shown and exported["anchor"] == "cup.mp4"
    with page.expect_download(timeout=300_000) as html_file:
        page.click("#export-html")
    gallery = Path(html_file.value.path()).read_text()
    assert gallery.count('src="data:video/mp4;base64,') == len(shown) and "Videos are embedded" in gallery
    clip = base64.b64decode(re.search(r'src="data:video/mp4;base64,([^"#]+)', gallery)[1], validate=True)
    with av.open(io.BytesIO(clip)) as container:  # embedded whole: the bytes decode
        assert container.streams.video[0].codec_context.name == "h264" and next(container.decode(video=0))
    assert "file://" not in gallery and "http" not in gallery  # plays wherever it is opened, reaches nothing
    assert not page.errors, page.errors


def test_the_keyboard_reaches_compare_and_a_phone_needs_no_sideways_scrolling(app_url, page):
    ready(page, app_url + "/?anchor=cup.mp4&c=location%3D1&k=3")
    page.wait_for_selector(HITS)
    page.focus("#hit-1")  # a card is one tab stop
    page.keyboard.press("Enter")
    page.wait_for_selector("#compare:not([hidden]) #compare-scores .scores")
    page.set_viewport_size({"width": 390, "height": 844})
    page.go_back()
    page.wait_for_selector("#results:not([hidden])")
    assert page.evaluate("() => document.documentElement.scrollWidth") <= 390
    ready(page, app_url + "/?view=collection")
    assert page.evaluate("() => document.documentElement.scrollWidth") <= 390
    assert not page.errors, page.errors


def test_filters_hide_results_without_redrawing_them(app_url, page):
    ready(page, app_url + "/?anchor=campus_01.mp4&start=10&end=20&c=location%3D1&k=8")
    page.wait_for_selector(HITS)
    page.click("#hit-1 details.evidence summary")
    page.wait_for_selector("#hit-1 .evidence-body table.scored-by")
    labels = page.eval_on_selector_all(HITS, "items => items.map((li) => li.dataset.confidence)")
    page.select_option("#confidence-filter", "strong")
    page.wait_for_function("() => location.search.includes('show=strong')")
    shown = page.eval_on_selector_all(HITS, "items => items.filter((li) => !li.hidden)"
                                            ".map((li) => li.dataset.confidence)")
    assert shown == [label for label in labels if label in ("strong", "high", "far")] and "show=strong" in page.url
    assert page.eval_on_selector("#hit-1 details.evidence", "d => d.open")  # the same card, still open
    page.select_option("#confidence-filter", "all")
    assert page.eval_on_selector_all(HITS, "items => items.filter((li) => li.hidden).length") == 0
    assert not page.errors, page.errors
