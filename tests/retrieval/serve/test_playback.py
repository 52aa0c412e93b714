"""Which URL plays each clip: the file, its H.264 preview (made once, kept in the index), or none with the reason."""

import shutil
import subprocess

import av
import pytest
from fastapi.testclient import TestClient

from retrieval.api import Engine
from retrieval.media import preview, stream_check
from retrieval.pipeline.settings import IndexSettings
from retrieval.serve.server import create_app
from tests.indexes import copied_index, indexed_copies
from tests.paths import EXAMPLES
from tests.retrieval.serve.browser import make_avi

LOCAL = "http://localhost"
pytestmark = pytest.mark.skipif(shutil.which("ffmpeg") is None, reason="needs the ffmpeg tool")


@pytest.fixture(scope="module")
def videos(tmp_path_factory):
    videos = tmp_path_factory.mktemp("playback") / "videos"
    videos.mkdir()
    shutil.copy(EXAMPLES / "cup.mp4", videos / "cup.mp4")
    make_avi(EXAMPLES / "cup.mp4", videos / "old" / "cup.avi", seconds=3)
    Engine(videos / ".convis").index(videos, ["efficientnet-lite0"], IndexSettings(workers=1))
    return videos


def playing(client) -> dict[str, dict]:
    items = client.get("/collection").json()["items"]
    return {item["path"]: {"media": item["media"], **item["playback"]} for item in items}


def test_a_file_browsers_cannot_play_gets_a_preview_made_once(videos):
    with TestClient(create_app(videos / ".convis"), base_url=LOCAL) as client:
        found = playing(client)
        assert found["cup.mp4"] == {"media": "/media/cup.mp4", "kind": "original", "reason": None}
        assert found["old/cup.avi"]["media"] == "/previews/old/cup.avi" and found["old/cup.avi"]["kind"] == "preview"
        assert "msmpeg4v3" in found["old/cup.avi"]["reason"]
        first = client.get("/previews/old/cup.avi")
        assert first.status_code == 200 and first.headers["content-type"] == "video/mp4"
        made = list((videos / ".convis" / "previews").glob("*.mp4"))
        assert len(made) == 1
        with av.open(str(made[0])) as container:
            assert container.streams.video[0].codec_context.name == "h264"
        stamp = made[0].stat().st_mtime_ns
        assert client.get("/previews/old/cup.avi").content == first.content
        assert made[0].stat().st_mtime_ns == stamp  # kept, not made again
        assert client.get("/previews/cup.mp4").content == (videos / "cup.mp4").read_bytes()  # plays as it is


def test_without_ffmpeg_the_app_is_told_it_cannot_play(videos, monkeypatch):
    shutil.rmtree(videos / ".convis" / "previews", ignore_errors=True)
    monkeypatch.setattr(preview.shutil, "which", lambda _name: None)
    with TestClient(create_app(videos / ".convis"), base_url=LOCAL) as client:
        avi = playing(client)["old/cup.avi"]
        assert avi["media"] is None and avi["kind"] == "none"
        assert "browsers cannot play it" in avi["reason"] and "ffmpeg is not installed" in avi["reason"]
        refused = client.get("/previews/old/cup.avi")
        assert refused.status_code == 503 and "ffmpeg" in refused.json()["error"]


def test_a_file_gone_since_indexing_is_one_item_that_cannot_play(videos, tmp_path):
    copy = copied_index(videos, tmp_path / "videos")
    (copy / "old" / "cup.avi").unlink()
    with TestClient(create_app(copy / ".convis"), base_url=LOCAL) as client:
        found = playing(client)  # the page still comes
        assert found["cup.mp4"]["kind"] == "original"
        assert found["old/cup.avi"] == {"media": None, "kind": "none", "reason": "no such file: old/cup.avi"}


def test_the_gallery_download_is_named_in_ascii_whatever_the_anchor(videos, tmp_path):
    copy = copied_index(videos, tmp_path / "videos")
    shutil.copy(EXAMPLES / "cup.mp4", copy / "東京 \"clip\".mp4")
    with TestClient(create_app(copy / ".convis"), base_url=LOCAL) as client:
        page = client.post("/export/gallery", json={"anchor": '東京 "clip".mp4', "concepts": ["location"], "k": 1})
        assert page.status_code == 200
        assert page.headers["content-disposition"] == 'attachment; filename="convis-_clip_.html"'


def decode_errors(path) -> list[str]:
    """What ffmpeg says decoding the whole of ``path`` (computed here, not by convis)."""
    done = subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-i", str(path), "-f", "null", "-"],
                          capture_output=True, text=True, check=False)
    return [line for line in done.stderr.splitlines() if line.strip()] + ([] if done.returncode == 0 else ["exit"])


@pytest.fixture(scope="module")
def examples(tmp_path_factory):
    """box.mp4 (H.264 with a broken slice in its first frames) and cup.mp4 (clean), indexed."""
    return indexed_copies(tmp_path_factory.mktemp("examples"), ["box.mp4", "cup.mp4"], ["efficientnet-lite0"])


def test_a_file_with_a_stream_browsers_cannot_decode_gets_a_clean_h264_preview(examples, tmp_path):
    assert decode_errors(EXAMPLES / "box.mp4") and not decode_errors(EXAMPLES / "cup.mp4")
    with TestClient(create_app(examples / ".convis"), base_url=LOCAL) as client:
        found = playing(client)
        assert found["cup.mp4"]["kind"] == "original"
        assert found["box.mp4"]["media"] == "/previews/box.mp4" and found["box.mp4"]["kind"] == "preview"
        assert "non-intra slice" in found["box.mp4"]["reason"] and str(examples) not in found["box.mp4"]["reason"]
        sent = client.get("/previews/box.mp4")
    assert sent.status_code == 200 and sent.content != (examples / "box.mp4").read_bytes()
    made = tmp_path / "preview.mp4"
    made.write_bytes(sent.content)
    with av.open(str(made)) as container:
        assert container.streams.video[0].codec_context.name == "h264"
        assert container.duration / 1e6 == pytest.approx(15.18, abs=0.3)
    assert decode_errors(made) == []


def test_the_verdict_is_kept_in_the_index_and_the_file_is_decoded_once(examples, tmp_path, monkeypatch):
    copy = copied_index(examples, tmp_path / "videos")
    (copy / ".convis" / "previews" / stream_check.VERDICTS_NAME).unlink(missing_ok=True)
    runs = []
    real = stream_check.subprocess.run
    monkeypatch.setattr(stream_check.subprocess, "run", lambda command, **kw: runs.append(command) or real(command,
                                                                                                         **kw))
    for _server in range(2):  # a second server reads the first one's verdicts
        with TestClient(create_app(copy / ".convis"), base_url=LOCAL) as client:
            assert playing(client)["box.mp4"]["kind"] == "preview"
    assert (copy / ".convis" / "previews" / stream_check.VERDICTS_NAME).is_file()
    assert len(runs) == 2  # box.mp4 and cup.mp4 once each, by the first server


def test_forced_preview_of_a_file_judged_playable_links_it_from_then_on(examples, tmp_path):
    copy = copied_index(examples, tmp_path / "videos")
    with TestClient(create_app(copy / ".convis"), base_url=LOCAL) as client:
        assert playing(client)["cup.mp4"]["kind"] == "original"
        assert client.get("/previews/cup.mp4").content == (copy / "cup.mp4").read_bytes()
        forced = client.get("/previews/cup.mp4", params={"force": "1"})
        assert forced.status_code == 200 and forced.content != (copy / "cup.mp4").read_bytes()
        now = playing(client)["cup.mp4"]
        assert now["media"] == "/previews/cup.mp4" and now["kind"] == "preview"
        assert "a browser could not decode it" in now["reason"]
