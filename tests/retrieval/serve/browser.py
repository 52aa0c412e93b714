"""What the browser tests share: the Chromium they drive, a server in a thread, the app's collection of clips."""

import shutil
import socket
import subprocess
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

from retrieval.api import Engine
from retrieval.pipeline.settings import IndexSettings
from retrieval.serve.server import make_server
from tests.indexes import CAPTIONS
from tests.paths import EXAMPLES

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
FFMPEG = shutil.which("ffmpeg")
CHROMIUM_MISSING = "needs Chromium at /usr/bin/chromium: run `make browser` as root (apt-get install chromium)"
needs_chromium = pytest.mark.skipif(not CHROMIUM.exists(), reason=CHROMIUM_MISSING)
needs_ffmpeg = pytest.mark.skipif(FFMPEG is None, reason="needs the ffmpeg tool (apt-get install -y ffmpeg)")

ALL_LOADED = """(selector) => {
  const images = [...document.querySelectorAll(selector)];
  return images.length > 0 && images.every((img) => img.complete && img.naturalWidth > 0);
}"""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def serving(index_dir: Path, allow_writes: bool = False, **options):
    """`convis serve` on 127.0.0.1 and a free port, in a background thread (``options``: create_app's, e.g.
    reranker); yields its base URL."""
    port = free_port()
    uvicorn_server = make_server(index_dir, "127.0.0.1", port, log_level="warning", allow_writes=allow_writes,
                                 **options)
    thread = threading.Thread(target=uvicorn_server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not uvicorn_server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the server did not start"
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}"
    uvicorn_server.should_exit = True
    thread.join(timeout=10)


def make_avi(source: Path, out: Path, seconds: float = 10) -> Path:
    """``source`` re-encoded as MS-MPEG4 v3 in AVI: a real camera format no browser plays."""
    out.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run([FFMPEG, "-nostdin", "-v", "error", "-i", str(source), "-t", str(seconds), "-c:v", "msmpeg4v3",
                    "-q:v", "5", "-an", str(out)], check=True)
    return out


def example_folder(base: Path, names, copies: dict[str, str] | None = None) -> Path:
    """``base/videos`` holding the example clips ``names``, and each of ``copies`` (new name -> example) as a byte
    copy under another name."""
    videos = base / "videos"
    videos.mkdir()
    for name in names:
        shutil.copy(EXAMPLES / name, videos / name)
    for name, source in (copies or {}).items():
        shutil.copy(EXAMPLES / source, videos / name)
    return videos


def collection(base: Path) -> Path:
    """campus_01/02 (20 s), box (15 s), cup (8 s), more/bikes_old.avi (10 s) and a broken file, in 10 s units,
    with the example captions."""
    videos = base / "videos"
    videos.mkdir()
    for name in ("campus_01.mp4", "campus_02.mp4", "box.mp4", "cup.mp4"):
        shutil.copy(EXAMPLES / name, videos / name)
    make_avi(EXAMPLES / "bikes.mp4", videos / "more" / "bikes_old.avi")
    (videos / "broken.mp4").write_bytes(b"\x00\x00\x00\x18ftypmp42" + bytes(2000))
    Engine(videos / ".convis").index(videos, ["efficientnet-lite0"],
                                     IndexSettings(workers=1, segment_seconds=10.0, captions=CAPTIONS))
    return videos
