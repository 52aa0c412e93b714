"""The web app's removed files: a file removed from the collection is listed under `show: removed files` with
when, and its Undo puts it back in the grid and in the results of a query at once."""


import pytest

from tests.retrieval.serve.browser import serving

HITS = "#hits li.hit"
UNIT = "#grid li.unit[data-path='cup.mp4']"


@pytest.fixture
def writable(app_videos, tmp_path):
    """A copy of the app's collection this test may change, its catalog's root moved with it."""
    from tests.indexes import copied_index

    return copied_index(app_videos, tmp_path / "videos")


def ready(page, url: str) -> None:
    page.goto(url)
    page.wait_for_selector("body[data-ready='1']")


def query_hits(page, url: str) -> list[str]:
    ready(page, url + "/?anchor=campus_01.mp4&c=location%3D1&k=20")
    page.wait_for_selector(HITS)
    return page.eval_on_selector_all(HITS, "items => items.map((li) => li.dataset.path)")


@pytest.mark.slow
def test_a_removed_file_is_listed_and_its_undo_brings_it_back(writable, browser, tmp_path):
    page = browser.new_page(viewport={"width": 1280, "height": 1000})
    page.set_default_timeout(30_000)
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("dialog", lambda dialog: dialog.accept())
    with serving(writable / ".convis", allow_writes=True) as url:
        assert "cup.mp4" in query_hits(page, url)
        ready(page, url + "/?view=collection")
        page.click(f"{UNIT} button.remove-file")
        page.wait_for_function(f"() => !document.querySelector(\"{UNIT}\")")
        assert "cup.mp4" not in query_hits(page, url)

        ready(page, url + "/?view=collection")
        page.select_option("#file-status", "removed")
        page.wait_for_selector("#removed-list li.removed-file[data-path='cup.mp4']")
        assert "status=removed" in page.url
        item = page.inner_text("#removed-list li.removed-file[data-path='cup.mp4']")
        assert "removed 20" in item and "unit" in item and "kept" in item
        page.screenshot(path=str(tmp_path / "removed.png"))

        page.click("#removed-list li[data-path='cup.mp4'] button.undo-remove")
        page.wait_for_function("() => /restored cup.mp4/.test(document.querySelector('#status').textContent)")
        assert page.eval_on_selector_all("#removed-list li.removed-file", "items => items.length") == 0
        page.select_option("#file-status", "ok")
        page.wait_for_selector(UNIT)
        assert "cup.mp4" in query_hits(page, url)
    assert not errors, errors
