"""The near-duplicates page's bulk actions on a server taking writes: every member of a group tagged at once, the
proposed drops taken out of the index with an undo that puts them back; a read-only server offers neither."""

import json
import urllib.request

import pytest

from retrieval.api import Engine
from retrieval.pipeline.settings import IndexSettings
from tests.retrieval.serve.browser import example_folder, needs_chromium, needs_ffmpeg, serving

pytestmark = [needs_chromium, needs_ffmpeg]
PAGE = "/ui/dupes.html?threshold=0.95"
GROUP = "#groups section.dupe-group"


@pytest.fixture(scope="module")
def copies(tmp_path_factory):
    """cup.mp4, a byte copy of it and box.mp4, indexed by pixel fingerprints: one group, its copy to drop."""
    videos = example_folder(tmp_path_factory.mktemp("dupes"), ("cup.mp4", "box.mp4"), {"cup copy.mp4": "cup.mp4"})
    Engine(videos / ".convis").index(videos, ["fingerprint"], IndexSettings(workers=1))
    return videos


def collection(url: str, status: str = "ok") -> dict:
    with urllib.request.urlopen(f"{url}/collection?status={status}") as answer:
        return json.load(answer)


def test_a_group_is_tagged_and_its_drops_removed_then_restored(copies, browser):
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.set_default_timeout(30_000)
    with serving(copies / ".convis", allow_writes=True) as url:
        page.goto(url + PAGE)
        page.wait_for_selector(f"{GROUP} .group-actions")
        page.fill(f"{GROUP} input.group-tag", "twin")
        page.click(f"{GROUP} button.tag-group")
        page.wait_for_function("() => /tagged 2 file/.test(document.querySelector('#actions-status').textContent)")
        tags = {item["path"]: item["tags"] for item in collection(url)["items"]}
        assert tags == {"box.mp4": [], "cup copy.mp4": ["twin"], "cup.mp4": ["twin"]}

        page.click(f"{GROUP} button.remove-drops")
        page.wait_for_selector(f"{GROUP} .dupe-member.removed")
        assert [item["path"] for item in collection(url, "removed")["items"]] == ["cup.mp4"]
        page.click(f"{GROUP} button.undo-drops")
        page.wait_for_function("() => /restored 1 file/.test(document.querySelector('#actions-status').textContent)")
        assert collection(url, "removed")["items"] == [] and not page.query_selector(".dupe-member.removed")


def test_a_read_only_server_offers_no_bulk_actions(copies, browser):
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.set_default_timeout(30_000)
    with serving(copies / ".convis") as url:
        page.goto(url + PAGE)
        page.wait_for_selector(f"{GROUP} .dupe-member")
        assert page.query_selector(".group-actions") is None
