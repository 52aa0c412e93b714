"""The web app plays every example clip in headless Chromium: box.mp4 (H.264 with a broken slice that Chromium's
decoder refuses) through its H.264 preview, whether the server's check found it or the browser's decode error did."""


from retrieval.media import stream_check
from tests.indexes import copied_index
from tests.retrieval.serve.browser import needs_chromium, needs_ffmpeg, serving

pytestmark = [needs_chromium, needs_ffmpeg]
BOX = "#hits li.hit[data-path='box.mp4']"
# each player of box.mp4's units has decoded frames and none has an error; play() where it is not yet playing
PLAYING = f"""() => [...document.querySelectorAll(\"{BOX} video\")].every((v) => {{
  if (v.paused && !v.error) {{ v.muted = true; v.play().catch(() => {{}}); }}
  return v.readyState >= 2 && !v.error && v.currentTime > 0.5 + Number(v.src.split('#t=')[1].split(',')[0]);
}})"""


def results_for_cup(page, url: str) -> None:
    page.goto(url + "/?anchor=cup.mp4&c=location%3D1&k=10")
    page.wait_for_selector("body[data-ready='1']")
    play_first_box_unit(page)


def play_first_box_unit(page) -> None:
    """A player only when asked for: a click on the poster of box.mp4's unit from 0 s."""
    page.click(f"{BOX}[data-start='0'] .poster")
    page.wait_for_selector(f"{BOX} video")


def sources(page) -> list[str]:
    return page.eval_on_selector_all(f"{BOX} video", "vs => vs.map((v) => v.getAttribute('src'))")


def box_plays(page) -> None:
    page.wait_for_function(PLAYING, timeout=180_000, polling=500)  # the first request makes the preview
    assert min(page.eval_on_selector_all(f"{BOX} video", "vs => vs.map((v) => v.videoWidth)")) > 0
    assert "cannot play here" not in " ".join(page.eval_on_selector_all(BOX, "cards => cards.map((c) => c.innerText)"))
    assert not page.errors, page.errors


def test_box_plays_through_the_preview_the_server_links(app_videos, page, tmp_path):
    copy = copied_index(app_videos, tmp_path / "videos")
    with serving(copy / ".convis") as url:
        results_for_cup(page, url)
        assert all(src.startswith("/previews/box.mp4#t=") for src in sources(page))
        box_plays(page)


def test_a_decode_error_in_the_browser_switches_to_a_preview(app_videos, page, tmp_path, monkeypatch):
    copy = copied_index(app_videos, tmp_path / "videos")
    (copy / ".convis" / "previews" / stream_check.VERDICTS_NAME).unlink(missing_ok=True)
    monkeypatch.setattr(stream_check, "stream_errors", lambda _path: None)  # a check that misses the broken slice
    with serving(copy / ".convis") as url:
        results_for_cup(page, url)
        box_plays(page)
        # its first unit starts on the broken slice: that player switched to a preview made for it
        assert any("/previews/box.mp4?force=1#t=0," in src for src in sources(page)), sources(page)
        page.reload()  # the server keeps the browser's verdict: the file is linked to its preview from now on
        page.wait_for_selector("body[data-ready='1']")
        play_first_box_unit(page)
        assert all(src.startswith("/previews/box.mp4#t=") for src in sources(page))
