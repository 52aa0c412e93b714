"""Uploads cannot fill the disk: bodies are cut off at the limit while they stream, only videos are kept,
uploads together stay within a quota, and their folder goes when the server does."""

import os
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from retrieval.serve.guards import MULTIPART_SLACK
from retrieval.serve.server import create_app
from retrieval.serve.uploads import UPLOAD_NAME
from tests.paths import ROOT

LOCAL = "http://localhost"
LIMIT = 1 << 20
CHUNK = 64 << 10
BOUNDARY = "convisboundary"


def _multipart_chunks(total: int) -> list[bytes]:
    head = (f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="big.mp4"\r\n'
            "Content-Type: video/mp4\r\n\r\n").encode()
    return [head] + [b"\0" * CHUNK] * (total // CHUNK)


def _post_raw(app, chunks: list[bytes], headers: list[tuple[bytes, bytes]]) -> tuple[int, int]:
    """POST /uploads straight through ASGI: the status, and how many body bytes the app pulled."""
    pulled, status = 0, None
    pending = list(chunks)

    async def receive():
        nonlocal pulled
        if not pending:
            return {"type": "http.disconnect"}
        chunk = pending.pop(0)
        pulled += len(chunk)
        return {"type": "http.request", "body": chunk, "more_body": bool(pending)}

    async def send(message):
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]

    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
             "scheme": "http", "path": "/uploads", "raw_path": b"/uploads", "query_string": b"", "root_path": "",
             "client": ("127.0.0.1", 50000), "server": ("localhost", 80),
             "headers": [(b"host", b"localhost"),
                         (b"content-type", f"multipart/form-data; boundary={BOUNDARY}".encode()), *headers]}
    anyio.run(app, scope, receive, send)
    return status, pulled


def stored_clips(folder: Path) -> list[Path]:
    """The uploads stored in ``folder``, not the records of their names beside them."""
    return [f for f in folder.iterdir() if UPLOAD_NAME.fullmatch(f.name)]


@pytest.fixture
def small_app(example_index):
    return create_app(example_index, max_upload=LIMIT, upload_quota=4 * LIMIT)


@pytest.mark.parametrize("headers", [
    [],  # chunked: no declared length
    [(b"content-length", b"1000")],  # declares less than it sends
], ids=["no-length", "understated-length"])
def test_an_upload_is_cut_off_at_the_limit_while_it_streams(small_app, headers):
    status, pulled = _post_raw(small_app, _multipart_chunks(16 * LIMIT), headers)
    assert status == 413
    assert pulled <= LIMIT + MULTIPART_SLACK + 2 * CHUNK  # the rest of the 16 MiB was never read
    assert not os.listdir(small_app.state.convis.uploads.folder)


def test_a_small_upload_without_a_declared_length_is_taken(small_app, example_videos):
    clip = (example_videos / "campus_01.mp4").read_bytes()
    head = (f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="c.mp4"\r\n'
            "Content-Type: video/mp4\r\n\r\n").encode()
    body = [head, clip[: len(clip) // 2], clip[len(clip) // 2:], f"\r\n--{BOUNDARY}--\r\n".encode()]
    status, _ = _post_raw(small_app, body, [])
    assert status == 200
    assert len(stored_clips(small_app.state.convis.uploads.folder)) == 1


@pytest.mark.parametrize("name, content", [
    ("fake.mp4", b"this is not a video " * 500),
    ("empty.mov", b""),
    ("cut.mp4", (ROOT / "examples" / "videos" / "cup.mp4").read_bytes()[:4000]),  # a truncated real clip
])
def test_an_upload_that_is_not_a_video_is_refused_and_removed(small_app, name, content):
    with TestClient(small_app, base_url=LOCAL) as client:
        response = client.post("/uploads", files={"file": (name, content, "video/mp4")})
        assert response.status_code == 415 and "not a video" in response.json()["error"]
        error = response.json()["error"]
        assert error.startswith(f"{name} is not a video this server can decode: ") and "\n" not in error
        assert "/" not in error and ".part" not in error  # no folder of the server's, no temp name
        assert not os.listdir(small_app.state.convis.uploads.folder)


def test_uploads_over_the_quota_evict_the_oldest(example_index, example_videos):
    names = ["campus_01.mp4", "campus_02.mp4", "campus_03.mp4"]
    sizes = [(example_videos / name).stat().st_size for name in names]
    app = create_app(example_index, max_upload=max(sizes), upload_quota=sizes[1] + sizes[2])
    with TestClient(app, base_url=LOCAL) as client:
        refs = []
        for name in names:
            response = client.post("/uploads", files={"file": (name, (example_videos / name).read_bytes())})
            assert response.status_code == 200, response.text
            refs.append(response.json()["anchor"])
        gone = client.get(f"/media/{refs[0]}")
        assert gone.status_code == 404 and "quota" in gone.json()["error"]
        assert [client.get(f"/media/{ref}").status_code for ref in refs[1:]] == [200, 200]
        folder = app.state.convis.uploads.folder
        assert sum(f.stat().st_size for f in stored_clips(folder)) <= sizes[1] + sizes[2]


def test_the_upload_folder_is_removed_when_the_process_exits(example_index):
    # the app's shutdown never runs here, as when a second Ctrl-C forces the server down
    code = ("import sys; from pathlib import Path; from retrieval.serve.server import create_app; "
            "print(create_app(Path(sys.argv[1])).state.convis.uploads.folder)")
    run = subprocess.run([sys.executable, "-c", code, str(example_index)], capture_output=True, text=True,
                         cwd=ROOT, env={**os.environ, "HF_HUB_OFFLINE": "1"}, timeout=120)
    assert run.returncode == 0, run.stderr
    folder = Path(run.stdout.strip().splitlines()[-1])
    assert folder.name.startswith("convis-uploads-") and not folder.exists()


def test_serve_takes_the_upload_limits_from_its_options(example_index, monkeypatch):
    from retrieval.cli import pages
    from retrieval.cli.app import app

    started = {}
    monkeypatch.setattr(pages, "run_server", lambda *args, **kwargs: started.update(kwargs))
    monkeypatch.setattr(pages, "check_port", lambda host, port: None)
    runner = CliRunner()
    ok = runner.invoke(app, ["serve", str(example_index), "--max-upload-mb", "8", "--upload-quota-mb", "16"])
    assert ok.exit_code == 0, ok.output
    assert started["max_upload"] == 8 << 20 and started["upload_quota"] == 16 << 20
    refused = runner.invoke(app, ["serve", str(example_index), "--max-upload-mb", "8", "--upload-quota-mb", "4"])
    assert refused.exit_code != 0 and "--upload-quota-mb" in refused.output and "Traceback" not in refused.output


def test_an_uploaded_anchor_keeps_its_name_for_a_later_page_and_server(example_index, example_videos):
    """A reloaded page asks by the ref alone: the answer names the file as it was uploaded."""
    clip = (example_videos / "cup.mp4").read_bytes()
    first = create_app(example_index)
    with TestClient(first, base_url=LOCAL) as client:
        ref = client.post("/uploads", files={"file": ("my holiday.mp4", clip, "video/mp4")}).json()["anchor"]
        assert ref != "my holiday.mp4"
        answer = client.post("/query", json={"anchor": ref, "concepts": ["location"], "k": 2})
        assert answer.status_code == 200, answer.text
        assert answer.json()["anchor"] == ref and answer.json()["anchor_name"] == "my holiday.mp4"
        # a second app over the same uploads (another worker, or a restarted one that kept them) knows it too
        second = create_app(example_index)
        second.state.convis.uploads.folder = first.state.convis.uploads.folder
        with TestClient(second, base_url=LOCAL) as again:
            later = again.post("/query", json={"anchor": ref, "concepts": ["location"], "k": 2})
            assert later.status_code == 200, later.text
            assert later.json()["anchor_name"] == "my holiday.mp4"
        indexed = client.post("/query", json={"anchor": "box.mp4", "concepts": ["location"], "k": 2})
        assert indexed.json()["anchor_name"] == "box.mp4"
