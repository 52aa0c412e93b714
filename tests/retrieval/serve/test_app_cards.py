"""Tags and value chips in the web app: a tag added on a collection card shows on that file's result cards, a filter
`tags has X` keeps the file, and a chip's x takes it off again; a read-only server shows tags without editors; a
value chip of the filter panel, with its count of files, filters the results; a result's frame is a new query."""

import pytest

from tests.retrieval.serve.browser import needs_chromium, needs_ffmpeg, serving

pytestmark = [needs_chromium, needs_ffmpeg]
UNIT = "#grid li.unit[data-path='cup.mp4']"
QUERY = "/?anchor=campus_01.mp4&c=location%3D1&k=20"


@pytest.fixture
def writable(app_videos, tmp_path):
    from tests.indexes import copied_index

    return copied_index(app_videos, tmp_path / "videos")


def chips(page, selector: str) -> list[str]:
    return page.eval_on_selector_all(f"{selector} .tags .tag", "tags => tags.map((t) => t.firstChild.textContent)")


def test_a_tag_added_on_a_card_shows_filters_and_comes_off(writable, browser):
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.set_default_timeout(30_000)
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    with serving(writable / ".convis", allow_writes=True) as url:
        page.goto(url + "/?view=collection")
        page.fill(f"{UNIT} input.add-tag", "kitchen")
        page.press(f"{UNIT} input.add-tag", "Enter")
        page.wait_for_selector(f"{UNIT} .tags .tag")
        assert chips(page, UNIT) == ["kitchen"]

        page.goto(url + QUERY + "&where=tags%20has%20kitchen")
        page.wait_for_selector("#hits li.hit")
        hits = "#hits li.hit"
        assert page.eval_on_selector_all(hits, "items => items.map((li) => li.dataset.path)") == ["cup.mp4"]
        assert chips(page, hits) == ["kitchen"]
        page.click(f"{hits} .tags button.untag")
        page.wait_for_function("() => !document.querySelector('#hits li.hit .tags .tag')")

        page.goto(url + "/?view=collection")
        page.wait_for_selector(UNIT)
        assert chips(page, UNIT) == []
    assert not errors, errors


def test_a_read_only_server_shows_tags_without_editors(writable, browser):
    from retrieval.api import Engine

    Engine(writable / ".convis").tag(["cup.mp4"], ["tags=kitchen,red"])
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.set_default_timeout(30_000)
    with serving(writable / ".convis") as url:
        page.goto(url + "/?view=collection")
        page.wait_for_selector(f"{UNIT} .tags .tag")
        assert chips(page, UNIT) == ["kitchen", "red"]
        assert page.query_selector(f"{UNIT} input.add-tag") is None and page.query_selector(f"{UNIT} .untag") is None


def test_a_value_chip_filters_the_results_and_counts_its_files(app_videos, browser):
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.set_default_timeout(30_000)
    with serving(app_videos / ".convis") as url:
        page.goto(url + QUERY)
        page.wait_for_selector("#hits li.hit")
        assert page.is_hidden("#facet-list")  # folded: the results stay where they were
        page.click("#facets summary")
        chip = "#facet-list .facet[data-field='codec'] .facet-value[data-where='codec = msmpeg4']"
        assert page.inner_text(f"{chip} .count") == "1"
        page.click(chip)
        page.wait_for_function("() => document.querySelectorAll('#hits li.hit').length === 1")
        assert page.eval_on_selector("#hits li.hit", "li => li.dataset.path") == "more/bikes_old.avi"
        assert "where=codec" in page.url and page.get_attribute(chip, "aria-pressed") == "true"
        assert page.query_selector("#filter-chips li.chip[data-where='codec = msmpeg4']")


def test_a_results_frame_is_a_new_query(app_videos, browser):
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.set_default_timeout(60_000)
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    with serving(app_videos / ".convis") as url:
        page.goto(url + QUERY)
        page.wait_for_selector("#hit-1")
        hit = page.eval_on_selector("#hit-1", "li => [li.dataset.path, +li.dataset.start]")
        page.click("#hit-1 button.frame-query")
        page.wait_for_function("() => new URLSearchParams(location.search).get('end') !== null")
        params = page.evaluate("() => Object.fromEntries(new URLSearchParams(location.search))")
        assert params["anchor"] == hit[0] and float(params["end"]) - float(params["start"]) == pytest.approx(1)
        assert hit[1] <= float(params["start"]) <= hit[1] + 10
        # the results on screen are the new query's: its anchor is that second of the result
        page.wait_for_function("(start) => current && current.state.start === start && current.result?.hits.length",
                               arg=float(params["start"]))
        assert not page.evaluate("() => document.querySelector('#status').className === 'error'"), \
            page.inner_text("#status")
    assert not errors, errors
