"""Which files browsers play as they are, and the H.264 previews and span clips made for the rest."""

import shutil
import subprocess
import threading
from pathlib import Path

import av
import pytest

from retrieval.media import preview
from retrieval.media.preview import PreviewError, Previews, ffmpeg_missing, playback, span_clip
from retrieval.media.scan import content_hash
from tests.paths import EXAMPLES

FFMPEG = "/usr/bin/ffmpeg"
pytestmark = pytest.mark.skipif(not Path(FFMPEG).exists(), reason=f"needs the ffmpeg command-line tool at {FFMPEG}")


def make_avi(path: Path, seconds: float = 2, size: str = "320x240") -> Path:
    """msmpeg4v3 in AVI, as old camera and DivX files are: no browser plays it."""
    subprocess.run([FFMPEG, "-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i", f"testsrc=size={size}:rate=10",
                    "-t", str(seconds), "-c:v", "msmpeg4v3", str(path)], check=True)
    return path


@pytest.fixture
def avi(tmp_path) -> Path:
    return make_avi(tmp_path / "old camera.avi")


@pytest.fixture
def mp4(tmp_path) -> Path:
    return Path(shutil.copy(EXAMPLES / "cup.mp4", tmp_path / "cup.mp4"))


def probe(path: Path) -> tuple[str, int, int, float]:
    with av.open(str(path)) as container:
        video = container.streams.video[0]
        return video.codec_context.name, video.width, video.height, container.duration / 1e6


def duration(path: Path) -> float:
    with av.open(str(path)) as container:
        return container.duration / 1e6


@pytest.fixture
def ffmpeg_runs(monkeypatch) -> list[list[str]]:
    """Every ffmpeg command the module runs (they still run)."""
    calls, run = [], subprocess.run

    def counting(command, *args, **kwargs):
        calls.append(command)
        return run(command, *args, **kwargs)

    monkeypatch.setattr(preview.subprocess, "run", counting)
    return calls


def test_h264_mp4_plays_as_it_is_and_an_msmpeg4_avi_does_not(mp4, avi):
    assert playback(mp4) == preview.Playback(True, "mp4", "h264", None)
    seen = playback(avi)
    assert not seen.playable and (seen.container, seen.codec) == ("avi", "msmpeg4v3")
    assert "msmpeg4v3" in seen.reason and "AVI" in seen.reason and "\n" not in seen.reason


def test_an_unreadable_file_is_not_playable_and_says_why_without_its_folder(tmp_path):
    broken = tmp_path / "broken.avi"
    broken.write_bytes(bytes(range(256)) * 8)
    seen = playback(broken)
    assert not seen.playable and seen.reason.startswith("cannot read the file")
    assert str(tmp_path) not in seen.reason


def test_ensure_makes_a_small_h264_mp4_of_the_whole_file(avi, tmp_path):
    make_avi(tmp_path / "big.avi", size="640x480")
    previews = Previews(tmp_path / "previews")
    for source in (avi, tmp_path / "big.avi"):
        made = previews.ensure(source, content_hash(source))
        assert made == previews.path_for(source, content_hash(source)) == previews.cached(source, content_hash(source))
        codec, width, height, seconds = probe(made)
        assert codec == "h264" and playback(made).playable
        assert abs(seconds - duration(source)) <= 0.2
        assert min(width, height) <= 360 and width % 2 == 0 and height % 2 == 0
    assert probe(previews.path_for(avi, content_hash(avi)))[1:3] == (320, 240)  # never upscaled
    big = tmp_path / "big.avi"
    assert probe(previews.path_for(big, content_hash(big)))[1:3] == (480, 360)
    assert not list((tmp_path / "previews").glob(".*"))  # no temporary file left behind


def test_a_made_preview_is_not_made_again(avi, tmp_path, ffmpeg_runs):
    previews = Previews(tmp_path / "previews")
    first = previews.ensure(avi, content_hash(avi))
    again = previews.ensure(avi, content_hash(avi))
    assert first == again and len(ffmpeg_runs) == 1


def test_two_requests_at_once_make_one_preview(avi, tmp_path, ffmpeg_runs):
    previews, other = Previews(tmp_path / "previews"), Previews(tmp_path / "previews")
    start, made = threading.Barrier(2), []

    def ask(instance):
        start.wait()
        made.append(instance.ensure(avi, content_hash(avi)))

    threads = [threading.Thread(target=ask, args=(p,)) for p in (previews, other)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(made) == 2 and made[0] == made[1] and len(ffmpeg_runs) == 1


def test_a_broken_file_gives_a_one_line_error_naming_only_the_file(tmp_path):
    broken = tmp_path / "broken.avi"
    broken.write_bytes(bytes(range(256)) * 8)
    previews = Previews(tmp_path / "previews")
    with pytest.raises(PreviewError) as caught:
        previews.ensure(broken, content_hash(broken))
    message = str(caught.value)
    assert "broken.avi" in message and str(tmp_path) not in message and "\n" not in message
    assert previews.cached(broken, content_hash(broken)) is None
    assert not list((tmp_path / "previews").iterdir())  # no half file that looks done


def test_without_ffmpeg_the_reason_says_so(avi, tmp_path, monkeypatch):
    assert ffmpeg_missing() is None
    monkeypatch.setattr(preview.shutil, "which", lambda name: None)
    assert "ffmpeg is not installed" in ffmpeg_missing()
    with pytest.raises(PreviewError, match="ffmpeg is not installed"):
        Previews(tmp_path / "previews").ensure(avi, content_hash(avi))
    with pytest.raises(PreviewError, match="ffmpeg is not installed"):
        span_clip(avi, 0.0, 1.0)


def test_a_preview_is_keyed_by_content_not_by_name(avi, tmp_path):
    previews = Previews(tmp_path / "previews")
    made = previews.ensure(avi, content_hash(avi))
    moved = Path(shutil.move(avi, tmp_path / "renamed.avi"))
    assert previews.cached(moved, content_hash(moved)) == made
    with pytest.raises(ValueError):
        previews.path_for(moved, "../../etc/passwd")


@pytest.mark.parametrize("start, end", [(0.5, 1.5), (1.0, None)])
def test_span_clip_holds_just_the_span(avi, tmp_path, start, end):
    clip = tmp_path / "clip.mp4"
    clip.write_bytes(span_clip(avi, start, end))
    codec, width, height, seconds = probe(clip)
    assert codec == "h264" and min(width, height) <= 240
    assert abs(seconds - ((end or duration(avi)) - start)) <= 0.3


def test_span_clip_over_the_size_cap_is_refused(avi):
    with pytest.raises(PreviewError, match="MiB"):
        span_clip(avi, 0.0, None, max_bytes=1000)
