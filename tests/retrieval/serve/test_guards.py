"""No other site reaches the app: host names, origins of writes, upload sizes, upload folders of dead servers."""

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from retrieval.serve import server
from retrieval.serve.guards import UPLOAD_PREFIX, allowed_hosts
from retrieval.serve.server import create_app


@pytest.fixture(scope="module")
def app(example_index):
    return create_app(example_index)


@pytest.mark.parametrize("path", ["/videos", "/media/cup.mp4", "/health"])
def test_a_rebinding_host_name_is_refused(app, path):
    with TestClient(app, base_url="http://attacker.example") as client:
        assert client.get(path).status_code == 400
    with TestClient(app, base_url="http://localhost:8000") as client:
        assert client.get(path).status_code == 200


def test_writes_from_another_origin_are_refused(app):
    body = {"anchor": "cup.mp4", "concepts": ["location"], "k": 2}
    with TestClient(app, base_url="http://127.0.0.1:8000") as client:
        refused = client.post("/query", json=body, headers={"Origin": "http://evil.example"})
        assert refused.status_code == 403 and "another origin" in refused.json()["error"]
        assert client.post("/query", json=body, headers={"Origin": "http://127.0.0.1:8000"}).status_code == 200
        assert client.post("/query", json=body).status_code == 200  # no Origin: not a browser page


def test_an_upload_is_refused_from_its_declared_length(example_index, monkeypatch):
    monkeypatch.setattr(server, "MAX_UPLOAD_BYTES", 1 << 20)
    form = {"Content-Type": "multipart/form-data; boundary=b"}
    with TestClient(create_app(example_index), base_url="http://localhost") as client:
        # a tiny body that claims to be huge: only the header can have refused it
        too_big = client.post("/uploads", content=b"x" * 10, headers={**form, "Content-Length": str(1 << 30)})
        assert too_big.status_code == 413
        within = client.post("/uploads", content=b"x" * 10, headers={**form, "Content-Length": "10"})
        assert within.status_code != 413  # judged on its content instead


def test_the_bound_address_and_extra_names_are_answered():
    assert "192.168.1.5" in allowed_hosts("192.168.1.5") and "0.0.0.0" not in allowed_hosts("0.0.0.0")
    assert "convis.lan" in allowed_hosts("0.0.0.0", ["convis.lan"])


def test_upload_folders_of_dead_servers_are_removed_at_start(example_index):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    stale = Path(tempfile.gettempdir()) / f"{UPLOAD_PREFIX}{dead.stdout.strip()}-abc"
    live = Path(tempfile.gettempdir()) / f"{UPLOAD_PREFIX}{os.getppid()}-abc"
    for folder in (stale, live):
        folder.mkdir(exist_ok=True)
        (folder / "clip.mp4").write_bytes(b"0" * 100)
    try:
        create_app(example_index)
        assert not stale.exists() and live.exists()
    finally:
        for folder in (stale, live):
            if folder.exists():
                (folder / "clip.mp4").unlink()
                folder.rmdir()
