"""Browser fixtures: one app collection a session (read it only: copy it to write), one Chromium and one desktop
tab a test."""

import pytest

from tests.retrieval.serve.browser import CHROMIUM, CHROMIUM_ARGS, CHROMIUM_MISSING, FFMPEG, collection


@pytest.fixture(scope="session")
def app_videos(tmp_path_factory):
    """The app's collection, indexed once (see ``collection``); tests that write copy it first."""
    if FFMPEG is None:
        pytest.skip("needs the ffmpeg tool (apt-get install -y ffmpeg)")
    return collection(tmp_path_factory.mktemp("app"))


@pytest.fixture
def browser():
    if not CHROMIUM.exists():
        pytest.skip(CHROMIUM_MISSING)
    from playwright.sync_api import sync_playwright  # playwright: a test extra, needed only with chromium

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture
def page(browser):
    """A desktop tab of ``browser`` that keeps the page's uncaught errors in ``tab.errors``."""
    tab = browser.new_page(viewport={"width": 1280, "height": 1000})
    tab.set_default_timeout(30_000)
    tab.errors = []
    tab.on("pageerror", lambda error: tab.errors.append(str(error)))
    return tab
