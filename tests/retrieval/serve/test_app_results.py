"""The app's results view in headless Chromium: a grid of poster cards (hover scrub, play on demand), the query
folded to one line with result #1 in the first viewport, the keys, grouped cards, and what the filters, errors and
bars say. One page load serves several checks."""

import re
from pathlib import Path

import pytest

from tests.retrieval.serve.browser import ALL_LOADED, needs_chromium, needs_ffmpeg, serving

pytestmark = [needs_chromium, needs_ffmpeg]
HITS = "#hits li.hit"
DESKTOP, PHONE = {"width": 1280, "height": 900}, {"width": 390, "height": 844}
BOX = "e => { const r = e.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; }"
ACTIVE = "() => document.activeElement.id"
SEARCH_TO_RESULT = "convis:search to first result"


@pytest.fixture(scope="module")
def app_url(app_videos):
    with serving(app_videos / ".convis") as url:
        yield url


def opened(browser, url: str, **options):
    page = browser.new_page(**options)
    page.set_default_timeout(30_000)
    page.errors = []
    page.on("pageerror", lambda error: page.errors.append(str(error)))
    page.goto(url)
    page.wait_for_selector("body[data-ready='1']")
    return page


def in_view(page, selector: str, viewport: dict) -> bool:
    left, top, right, bottom = page.eval_on_selector(selector, BOX)
    return left >= 0 and top >= 0 and right <= viewport["width"] and bottom <= viewport["height"]


def test_search_gives_a_grid_of_posters_in_view_that_scrub_play_and_answer_keys(app_url, browser):
    page = opened(browser, app_url + "/", viewport=DESKTOP)
    # the collection's strips: every frame and its time label whole inside its card
    page.wait_for_function(ALL_LOADED, arg="#grid img")
    cut = page.evaluate("""() => [...document.querySelectorAll('#grid .strip')].flatMap((strip) => {
        const edge = strip.getBoundingClientRect().right + 0.5;
        return [...strip.querySelectorAll('figure')].filter((f) => f.getBoundingClientRect().right > edge ||
            f.querySelector('figcaption').scrollWidth > f.querySelector('figcaption').clientWidth + 0.5)
          .map((f) => f.textContent); })""")
    assert cut == []

    page.select_option("#anchor", "campus_01.mp4")
    page.click("#search")
    page.wait_for_selector(HITS)
    # folded to one line, and result #1 (its poster whole) in the first viewport
    assert page.is_hidden("#query-form") and "campus_01.mp4" in page.inner_text("#query-summary")
    assert in_view(page, "#hit-1", DESKTOP)
    # a dense grid: several cards a row, each a poster (the unit's middle frame) and no player until asked
    tops = page.eval_on_selector_all(HITS, "cards => cards.map((c) => Math.round(c.getBoundingClientRect().top))")
    assert tops.count(tops[0]) >= 3
    page.wait_for_function(ALL_LOADED, arg="#hit-1 img.poster-img, #hit-2 img.poster-img")
    assert page.eval_on_selector_all("#hits video", "v => v.length") == 0
    hit = page.evaluate("""async () => { const img = document.querySelector('#hit-1 img.poster-img');
        const strip = await (await fetch(img.getAttribute('src').replace('/thumbs/', '/strips/'))).json();
        const [start, end] = document.querySelector('#hit-1 .time').textContent.split('-');
        return {frames: strip.frames.length, time: strip.frames[0].time, span: [start, end]}; }""")
    start, end = (sum(float(x) * 60 ** i for i, x in enumerate(reversed(t.split(":")))) for t in hit["span"])
    assert hit["frames"] == 1 and hit["time"] == pytest.approx((start + end) / 2, abs=0.6)

    # hover scrub: the pointer across the poster shows the strip's frames, first to last
    box = page.locator("#hit-2 .poster").bounding_box()
    shown = []
    for x in (0.02, 0.98):
        page.mouse.move(box["x"] + x * box["width"], box["y"] + box["height"] / 2)
        page.mouse.move(box["x"] + x * box["width"] + 1, box["y"] + box["height"] / 2)
        page.wait_for_function("() => /[?&]n=8&i=\\d/.test(document.querySelector('#hit-2 img').src)")
        page.wait_for_function(ALL_LOADED, arg="#hit-2 img.poster-img")
        shown.append((page.get_attribute("#hit-2 img", "src"), page.inner_text("#hit-2 .scrub-time")))
    assert shown[0][0].endswith("i=0") and re.search(r"i=[1-9]\d*$", shown[1][0]) and shown[0][1] != shown[1][1]
    page.mouse.move(1, 1)
    assert "n=1" in page.get_attribute("#hit-2 img", "src")  # back to its poster

    # a click plays that one unit, in place
    page.click("#hit-1 .poster")
    page.wait_for_selector("#hit-1 video")
    assert page.eval_on_selector_all("#hits video", "v => v.length") == 1

    # one tab stop a card; / focuses the words; j/k move; Enter compares; Esc comes back
    page.focus("#hit-2")
    page.keyboard.press("Tab")
    assert page.evaluate(ACTIVE) == "hit-3"
    page.keyboard.press("/")
    assert page.evaluate(ACTIVE) == "text" and page.is_visible("#query-form")
    page.click("#results-meta")
    for key, expected in (("j", "hit-1"), ("j", "hit-2"), ("j", "hit-3"), ("k", "hit-2")):
        page.keyboard.press(key)
        assert page.evaluate(ACTIVE) == expected
    second = page.get_attribute("#hit-2", "data-path")
    page.keyboard.press("Enter")
    page.wait_for_selector("#compare:not([hidden]) #compare-scores .scores")
    assert page.inner_text("#compare-title").endswith(f"vs {second}") and "view=compare" in page.url
    page.keyboard.press("Escape")
    page.wait_for_selector("#results:not([hidden])")
    assert "view=compare" not in page.url and page.is_hidden("#compare")
    took = page.evaluate(f"() => performance.getEntriesByName('{SEARCH_TO_RESULT}').map((m) => m.duration)")
    assert len(took) == 1 and took[0] > 0
    print(f"\nsearch to first result: {took[0]:.0f} ms")
    assert not page.errors, page.errors


def test_a_phone_shows_result_one_plays_on_tap_and_groups_by_video(app_url, browser):
    page = opened(browser, app_url + "/?anchor=campus_01.mp4&start=10&end=20&c=location%3D1&k=8", viewport=PHONE,
                  has_touch=True, is_mobile=True)
    page.wait_for_selector(HITS)
    assert in_view(page, "#hit-1 .poster", PHONE) and page.is_hidden("#query-form")
    assert page.evaluate("() => document.documentElement.scrollWidth") <= PHONE["width"]
    page.tap("#hit-1 .poster")
    page.wait_for_selector("#hit-1 video")
    assert page.eval_on_selector_all("#hits video", "v => v.length") == 1  # only the one tapped
    page.click("#edit-query")
    assert page.is_visible("#query-form") and page.is_hidden("#query-summary")

    # by video: one card a file with its best hit's poster, ranked 1, 2, 3 ...; the anchor's span on its file
    page.click("#tools-toggle")  # a phone folds the results' tools behind it
    page.check("#group-video")
    page.wait_for_selector("#hits > li.video-group")
    ranks = page.eval_on_selector_all("#hits > li.video-group > .hit-head .rank", "r => r.map((e) => e.textContent)")
    assert ranks == [f"#{i}" for i in range(1, len(ranks) + 1)] and len(ranks) >= 3
    assert page.eval_on_selector_all("#hits > li.video-group > .poster img", "i => i.length") == len(ranks)
    mark = page.eval_on_selector("li.video-group[data-path='campus_01.mp4'] .timeline .anchor-mark",
                                 "m => [parseFloat(m.style.left), parseFloat(m.style.width)]")
    assert mark == pytest.approx([50, 50], abs=0.5)  # 10-20 s of a 20 s file
    assert page.eval_on_selector_all("li.video-group[data-path='campus_02.mp4'] .anchor-mark", "m => m.length") == 0
    assert not page.errors, page.errors


def test_bars_share_one_scale_the_gallery_keeps_the_filters_and_errors_read_plainly(app_url, browser, tmp_path):
    # a composed card: concepts, "stays like the anchor" and the change on one scale: equal scores, equal bars
    page = opened(browser, app_url + "/?anchor=box.mp4&c=main-objects%3D1&change=a%20cup%20instead%20of%20a%20box"
                                     "&k=3", viewport=DESKTOP)
    page.wait_for_selector(HITS)
    rows = page.eval_on_selector_all("#hit-1 .scores .bar", """bars => bars.map((b) => [b.title,
        Number(b.nextElementSibling.textContent), parseFloat(b.firstElementChild.style.width)])""")
    assert len(rows) == 3 and "stays like the anchor" in page.inner_text("#hit-1 .scores")
    scales = {re.search(r"on a bar from (\S+) to (\S+)$", title).groups() for title, _, _ in rows}
    assert len(scales) == 1  # one scale for the card
    low, high = map(float, scales.pop())
    for _, value, width in rows:
        assert width == pytest.approx(100 * (value - low) / (high - low), abs=0.6)
    assert rows[0][1] == rows[1][1] and rows[0][2] == rows[1][2]  # one concept: staying alike is its score

    # the HTML gallery holds the results the filters leave, as CSV and JSON do
    page.goto(app_url + "/?anchor=campus_01.mp4&start=10&end=20&c=location%3D1&k=8")
    page.wait_for_selector(HITS)
    totals = sorted(page.eval_on_selector_all(f"{HITS} .total", "t => t.map((e) => Number(e.textContent.slice(6)))"),
                    reverse=True)
    page.goto(app_url + f"/?anchor=campus_01.mp4&start=10&end=20&c=location%3D1&k=8&min={totals[2]}")
    page.wait_for_selector(HITS)
    shown = page.eval_on_selector_all(HITS, "cards => cards.filter((c) => !c.hidden).map((c) => c.dataset.path)")
    assert 0 < len(shown) < len(totals)
    with page.expect_download(timeout=300_000) as html_file:
        page.click("#export-html")
    gallery = Path(html_file.value.path()).read_text()
    assert gallery.count('src="data:video/mp4;base64,') == len(shown)
    assert re.findall(r'<li class="card hit" [^>]*data-path="([^"]+)"', gallery) == shown

    # bad input from a URL: the form, and a plain sentence
    page.goto(app_url + "/?anchor=cup.mp4&c=location%3D0&k=3")
    page.wait_for_selector("body[data-ready='1']")
    page.wait_for_selector("#status.error")
    assert page.inner_text("#status") == "weight of concept 1 must be greater than or equal to 0.001"
    assert page.is_visible("#query-form") and page.is_hidden("#query-summary") and page.is_hidden("#results")

    # a failed upload: no results, and the URL no longer names the old query
    page.goto(app_url + "/?anchor=cup.mp4&c=location%3D1&k=3")
    page.wait_for_selector(HITS)
    bad = tmp_path / "holiday.mp4"
    bad.write_bytes(b"this is not a video" * 100)
    page.click("#edit-query")
    page.set_input_files("#upload", str(bad))
    page.wait_for_selector("#status.error")
    assert "anchor=" not in page.url and page.is_hidden("#results") and page.is_visible("#query-form")
    page.reload()
    page.wait_for_selector("body[data-ready='1']")
    assert page.is_hidden("#results")
    assert not page.errors, page.errors
