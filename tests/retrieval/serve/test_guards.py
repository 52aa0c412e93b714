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
        assert client.post("/query", json=body).status_code == 200  # neither Origin nor Sec-Fetch-Site: no page's


SERVER = "http://127.0.0.1:8000"
ANOTHER_ORIGIN = [
    "http://127.0.0.1:9999",  # another port on the same host
    "https://127.0.0.1:8000",  # another scheme
    "http://127.0.0.1",  # port 80, not 8000
    "http://localhost:8000",  # another name for the same machine is another origin
    "http://[::1]:8000",
    "http://user@127.0.0.1:8000",  # userinfo: no browser serialises an origin with it
    "http://evil.example@127.0.0.1:8000",
    "http://127.0.0.1:8000@evil.example",
    "http://127.0.0.1:8000/",  # a path: not an origin
    "http://127.0.0.1:8000.evil.example",
    "http://127.0.0.1:80\t00",  # a tab URL parsers drop: 8000 to them
    "http://127.0.0.1: 8000",
    "http://127.0.0.1:8000 http://evil.example",  # an origin list
    "null",  # a sandboxed frame, a file:// page
    "",
    "http://127.0.0.1:008000",
    "http://127.0.0.1:99999",
    "http://[::1",
]
SAME_ORIGIN = ["http://127.0.0.1:8000", "HTTP://127.0.0.1:8000", " http://127.0.0.1:8000\t"]  # case, OWS around


def write(app, base_url: str = SERVER, **headers):
    """The status of a write (POST /query) to ``app`` at ``base_url``: 403 where the origin check refused it, 422
    where it reached the route (an empty body: no query runs)."""
    with TestClient(app, base_url=base_url) as client:
        answer = client.post("/query", json={}, headers=headers)
    assert answer.status_code in (403, 422), answer.text
    if answer.status_code == 403:
        assert list(answer.json()) == ["error"] and "\n" not in answer.json()["error"]
    return answer.status_code


@pytest.mark.parametrize("origin", ANOTHER_ORIGIN)
def test_a_write_from_any_other_origin_is_refused(app, origin):
    assert write(app, Origin=origin) == 403


@pytest.mark.parametrize("origin", SAME_ORIGIN)
def test_a_write_from_the_servers_own_origin_is_taken(app, origin):
    assert write(app, Origin=origin) == 422


@pytest.mark.parametrize(("server", "origin", "status"), [
    ("http://localhost:8000", "HTTP://LOCALHOST:8000", 422),
    ("http://LocalHost:8000", "http://localhost:8000", 422),
    ("http://localhost", "http://localhost:80", 422),  # the scheme's default port, written or not
    ("http://localhost:80", "http://localhost", 422),
    ("http://localhost", "http://localhost:8080", 403),
    ("http://localhost", "https://localhost", 403),
    ("https://localhost", "https://localhost:443", 422),
    ("https://localhost", "http://localhost", 403),
    ("https://localhost", "https://localhost:80", 403),
    ("http://[::1]:8000", "http://[::1]:8000", 422),
    ("http://[::1]:8000", "http://[0:0:0:0:0:0:0:1]:8000", 422),  # one address, two spellings
    ("http://[::1]:8000", "http://[::1]:9999", 403),
    ("http://[::1]:8000", "http://[::1]", 403),
    ("http://[::1]:8000", "http://127.0.0.1:8000", 403),
])
def test_same_origin_is_scheme_host_and_port(app, server, origin, status):
    assert write(app, server, Origin=origin) == status


@pytest.mark.parametrize(("site", "status"), [
    ("same-origin", 422), ("none", 422), ("Same-Origin", 422),  # the page's own request; one the user typed
    ("same-site", 403), ("cross-site", 403), ("anything else", 403),
])
def test_a_write_without_origin_is_judged_by_sec_fetch_site(app, site, status):
    assert write(app, **{"Sec-Fetch-Site": site}) == status


def test_the_refusal_says_why_in_one_line(app):
    with TestClient(app, base_url=SERVER) as client:
        refused = client.post("/query", json={}, headers={"Origin": "http://127.0.0.1:9999\x1b[2J"})
        assert refused.status_code == 403
        assert refused.json() == {"error": "writes from another origin are refused (Origin: "
                                           "http://127.0.0.1:9999\\x1b[2J; this server is http://127.0.0.1:8000)"}
        refused = client.post("/query", json={}, headers={"Sec-Fetch-Site": "cross-site"})
        assert refused.json() == {"error": "writes from another site are refused (Sec-Fetch-Site: cross-site)"}


def test_reads_are_answered_from_any_origin(app):
    with TestClient(app, base_url=SERVER) as client:
        assert client.get("/health", headers={"Origin": "http://evil.example"}).status_code == 200
        assert client.get("/health", headers={"Sec-Fetch-Site": "cross-site"}).status_code == 200


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
