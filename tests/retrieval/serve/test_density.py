"""The web app at a glance, on a desktop (1400x1000) and a phone (390x844): the results come first, every score
bar is drawn, an empty answer says why, "why this result" fits its card, a collection card asks in which respect
before "more like this", a read-only server shows no index panel, and a phone folds the filters and tools behind a
toggle. The screenshots in docs/images are these pages: CONVIS_SCREENSHOTS=docs/images writes them there (by
default into the test's own folder)."""

import os
import struct
from pathlib import Path

import pytest

from tests.paths import ROOT
from tests.retrieval.serve.browser import ALL_LOADED, needs_chromium, needs_ffmpeg, serving

pytestmark = [needs_chromium, needs_ffmpeg]
SIZES = {"desktop": (1400, 1000), "phone": (390, 844)}
TOP_OF_FIRST = {"desktop": 0.5, "phone": 0.6}  # where result #1 starts, at most, as a share of the window's height
QUERY = "/?anchor=box.mp4&c=main-action%3D0.6&c=main-objects%3D0.4&k=6"
BARS = """() => [...document.querySelectorAll('#hits li.hit .bar')].map((bar) => bar.getBoundingClientRect().width)"""
FIRST_TOP = "() => document.querySelector('#hits li.hit').getBoundingClientRect().top + window.scrollY"


@pytest.fixture(scope="module")
def app_url(app_videos):
    with serving(app_videos / ".convis") as url:
        yield url


def tab(browser, size: str):
    width, height = SIZES[size]
    page = browser.new_page(viewport={"width": width, "height": height})
    page.set_default_timeout(30_000)
    page.errors = []
    page.on("pageerror", lambda error: page.errors.append(str(error)))
    return page


def shots_folder(tmp_path: Path) -> Path:
    return Path(os.environ.get("CONVIS_SCREENSHOTS") or tmp_path)


@pytest.mark.parametrize("size", SIZES)
def test_results_come_first_with_every_score_bar_drawn(browser, app_url, size, tmp_path):
    page = tab(browser, size)
    page.goto(app_url + QUERY)
    page.wait_for_function("() => document.querySelectorAll('#hits li.hit').length >= 3")
    page.wait_for_function(ALL_LOADED, arg="#hit-1 img.poster-img")
    bars = page.evaluate(BARS)
    assert len(bars) >= 6 and min(bars) >= 60, bars  # each concept's bar has room beside its value
    width, height = SIZES[size]
    page.evaluate("() => window.scrollTo(0, 0)")
    page.screenshot(path=str(shots_folder(tmp_path) / f"results-{width}x{height}.png"))
    assert page.evaluate(FIRST_TOP) < height * TOP_OF_FIRST[size]  # the query folded to a line above its results
    poster = page.eval_on_selector("#hit-1 .poster", "p => p.getBoundingClientRect().width")
    assert poster >= min(220, width - 60)  # a frame one can read, not a thumbnail
    assert page.is_hidden("#query-form") and page.is_visible("#query-summary")
    assert not page.errors, page.errors


def test_a_phone_folds_the_filters_and_tools_behind_a_toggle(browser, app_url):
    page = tab(browser, "phone")
    page.goto(app_url + QUERY + "&where=duration%20%3E%201")
    page.wait_for_selector("#hits li.hit")
    assert page.is_hidden("#filter-bar") and page.is_hidden("#results-tools")
    assert page.inner_text("#tools-toggle") == "Filters and tools (1 in use)"  # a folded filter still says so
    page.click("#tools-toggle")
    assert page.is_visible("#filter-bar") and page.is_visible("#results-tools")
    assert page.get_attribute("#tools-toggle", "aria-expanded") == "true"
    desktop = tab(browser, "desktop")
    desktop.goto(app_url + QUERY)
    desktop.wait_for_selector("#hits li.hit")
    assert desktop.is_hidden("#tools-toggle") and desktop.is_visible("#filter-bar")
    assert not page.errors and not desktop.errors, page.errors + desktop.errors


def test_why_this_result_fits_its_card(browser, app_url):
    page = tab(browser, "desktop")
    page.goto(app_url + QUERY)
    page.wait_for_selector("#hit-1")
    page.click("#hit-1 details.evidence summary")
    page.wait_for_selector("#hit-1 .evidence-body table.scored-by")
    card, table = (page.eval_on_selector(sel, "e => { const r = e.getBoundingClientRect(); return [r.left, r.right]; }")
                   for sel in ("#hit-1", "#hit-1 table.scored-by"))
    assert card[0] <= table[0] and table[1] <= card[1], (card, table)
    assert not page.errors, page.errors


def test_an_empty_answer_says_why(browser, app_url):
    page = tab(browser, "desktop")
    page.goto(app_url + QUERY + "&where=duration%20%3E%2099999")
    page.wait_for_selector("#empty-reason")
    assert page.inner_text("#empty-reason").startswith("No results: ")
    assert len(page.inner_text("#empty-reason")) > len("No results: ") + 10
    assert not page.errors, page.errors


def test_the_collection_asks_in_which_respect_and_read_only_shows_no_index_panel(browser, app_url, tmp_path):
    page = tab(browser, "desktop")
    page.goto(app_url + "/?view=collection")
    page.wait_for_selector("#grid li.unit")
    assert page.is_hidden("#manage")
    assert page.get_attribute("#nav-dupes", "href") == "/ui/dupes.html"
    page.wait_for_function(ALL_LOADED, arg="#grid li.unit img")
    page.screenshot(path=str(shots_folder(tmp_path) / "collection-1400x1000.png"))
    page.click("#grid li.unit:first-child button.more")
    assert "view=collection" in page.url  # nothing asked yet: a chooser, not a silent location query
    page.select_option("#grid li.unit:first-child .chooser select", "main-action")
    page.click("#grid li.unit:first-child .chooser button[type=submit]")
    page.wait_for_function("() => document.querySelectorAll('#hits li.hit').length >= 1")
    assert "c=main-action" in page.url
    assert not page.errors, page.errors


def test_the_dupes_page_is_styled_and_linked_back(browser, app_url):
    page = tab(browser, "desktop")
    page.goto(app_url + "/ui/dupes.html")
    page.wait_for_function("() => !document.querySelector('#summary').textContent.startsWith('Reading')")
    assert page.eval_on_selector("header.top nav a", "a => a.getAttribute('href')") == "/?view=collection"
    assert page.eval_on_selector("body", "b => getComputedStyle(b).fontFamily") != "Times New Roman"
    summary = page.inner_text("#summary")
    assert "#" not in summary, summary  # signals in words, not their ids


@pytest.mark.parametrize("name, size", [("results-1400x1000.png", (1400, 1000)),
                                        ("results-390x844.png", (390, 844))])
def test_the_documented_screenshots_are_at_the_measured_sizes(name, size):
    data = (ROOT / "docs" / "images" / name).read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and struct.unpack(">II", data[16:24]) == size
