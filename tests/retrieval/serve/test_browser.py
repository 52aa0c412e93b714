"""End to end in a real browser: headless Chromium drives the web UI of `convis serve` on the example index."""

import pytest

from tests.indexes import CAPTIONS, indexed_copies
from tests.media import make_clip
from tests.retrieval.serve.browser import ALL_LOADED, CHROMIUM, CHROMIUM_ARGS, needs_chromium, serving

pytestmark = needs_chromium


@pytest.fixture(scope="module")
def server(example_index):
    with serving(example_index) as url:
        yield url


@pytest.fixture(scope="module")
def captioned_server(tmp_path_factory, example_videos):
    """The server on three example clips indexed with EfficientNet-Lite0 and their captions."""
    videos = indexed_copies(tmp_path_factory.mktemp("captioned-ui"), ("cup.mp4", "box.mp4", "campus_01.mp4"),
                            ["efficientnet-lite0"], captions=CAPTIONS)
    with serving(videos / ".convis") as url:
        yield url


@pytest.fixture
def page(server):
    from playwright.sync_api import sync_playwright  # playwright: a test extra, needed only with chromium

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
        try:
            tab = browser.new_page(viewport={"width": 1280, "height": 1000})
            tab.set_default_timeout(20_000)
            yield tab
        finally:
            browser.close()


def test_location_query_and_compare_in_the_browser(server, page, tmp_path):
    requested, errors = [], []
    page.on("request", lambda request: requested.append(request.url))
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    page.on("pageerror", lambda error: errors.append(str(error)))

    page.goto(server + "/")
    page.wait_for_selector("body[data-ready='1']")
    page.select_option("#anchor", "campus_01.mp4")
    assert page.input_value("#concepts .concept-row .name") == "location"
    page.click("#search")

    page.wait_for_function("() => document.querySelectorAll('#hits li.hit').length >= 3")
    order = page.eval_on_selector_all("#hits li.hit", "items => items.map((li) => li.dataset.path)")
    assert sorted(order[:3]) == ["campus_02.mp4", "campus_03.mp4", "campus_04.mp4"]
    assert "campus_01.mp4" not in order
    page.wait_for_function(ALL_LOADED, arg="#anchor-strip img")
    page.wait_for_function(ALL_LOADED, arg="#hit-1 img.poster-img")
    page.click("#hit-1 .poster")  # the player comes when asked for
    assert page.get_attribute("#hit-1 video", "src") == f"/media/{order[0]}#t=0,20"
    page.wait_for_function("() => document.querySelector('#hit-1 video').readyState >= 1")  # served, seekable
    assert page.eval_on_selector("#hit-1 video", "v => v.duration") == pytest.approx(20, abs=0.5)
    gallery = tmp_path / "gallery.png"
    page.screenshot(path=str(gallery), full_page=False)

    second_total = page.inner_text("#hit-2 .total")
    page.click("#hit-2 .hit-head")
    page.wait_for_selector("#compare:not([hidden]) #compare-scores .scores")
    page.wait_for_function(ALL_LOADED, arg="#clip-a img, #clip-b img")
    assert page.is_hidden("#results")
    assert page.inner_text("#compare-title") == f"campus_01.mp4 vs {order[1]}"
    assert order[1] in page.inner_text("#clip-b h2")
    scores = page.inner_text("#compare-scores")
    assert "Location" in scores and "recall similarity" in scores
    assert page.inner_text("#compare-scores .total") == second_total  # the same scores as in the gallery
    shot = tmp_path / "compare.png"
    page.screenshot(path=str(shot), full_page=True)
    print(f"\nscreenshots: {gallery} {shot}")

    page.click("#back")
    assert page.is_visible("#results") and page.is_hidden("#compare")
    assert all(url.startswith(server) or url.startswith("data:") for url in requested), requested
    assert not errors, errors


def test_an_uploaded_clip_is_the_anchor(server, page, tmp_path):
    clip = make_clip(tmp_path / "my <clip>.mp4", frames=30, fps=10, size=(160, 120))
    page.goto(server + "/")
    page.wait_for_selector("body[data-ready='1']")
    page.set_input_files("#upload", str(clip))
    page.wait_for_function("() => document.querySelector('#anchor').value.startsWith('.uploads/')")
    assert page.inner_text("#anchor option:checked") == "uploaded: my <clip>.mp4"  # shown as text, not markup
    page.fill("#k", "3")
    page.click("#search")
    page.wait_for_function("() => document.querySelectorAll('#hits li.hit').length === 3")
    page.wait_for_function(ALL_LOADED, arg="#anchor-strip img")
    assert page.inner_text("#anchor-name") == "uploaded: my <clip>.mp4"
    page.reload()  # the page knows the upload by its ref alone now: the server tells its name
    page.wait_for_function("() => document.querySelectorAll('#hits li.hit').length === 3")
    assert page.inner_text("#anchor-name") == "uploaded: my <clip>.mp4"


def opened(page, url: str) -> list[str]:
    """The app loaded in ``page``; the list fills with the page's script errors."""
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(url + "/")
    page.wait_for_selector("body[data-ready='1']")
    return errors


def test_words_find_clips_in_the_browser(captioned_server, page):
    errors = opened(page, captioned_server)
    page.fill("#k", "2")
    page.fill("#text", "a hand holding a cup")
    page.click("#text-search")
    page.wait_for_function("() => document.querySelectorAll('#hits li.hit').length === 2")
    assert page.get_attribute("#hit-1", "data-path") == "cup.mp4"
    assert page.inner_text("#anchor-name") == '"a hand holding a cup"'
    assert "text: text" in page.inner_text("#results-meta") and "compare" not in page.inner_text("#results-meta")
    page.wait_for_function(ALL_LOADED, arg="#hits li.hit img")
    page.click("#hit-1 .hit-head")  # a sentence has nothing to compare a clip with: the results stay
    assert page.is_visible("#results") and page.is_hidden("#compare")
    assert not errors, errors


def test_words_on_an_index_without_a_text_tower_say_why_in_the_browser(server, page):
    page.goto(server + "/")
    page.wait_for_selector("body[data-ready='1']")
    assert page.is_disabled("#text") and page.is_disabled("#text-search")
    assert "this index has no text signal" in page.inner_text("#words-note")


def test_a_composed_query_in_the_browser_shows_what_stays_and_what_changes(captioned_server, page):
    errors = opened(page, captioned_server)
    page.select_option("#anchor", "box.mp4")
    page.fill("#concepts .concept-row .name", "main-objects")
    page.fill("#change", "a cup instead of a box")
    page.click("#search")
    page.wait_for_function("() => document.querySelectorAll('#hits li.hit').length === 2")
    assert page.get_attribute("#hit-1", "data-path") == "cup.mp4"  # the anchor itself is never a result
    scores = page.inner_text("#hit-1 .scores")
    assert "stays like the anchor" in scores and 'shows "a cup instead of a box"' in scores
    assert "w 0.50" in scores  # the weights of the two parts: (stay + change) / 2
    assert not errors, errors
