"""`convis serve --allow-writes`: the app adds uploaded clips to the index, removes files from it (never from
disk) and re-indexes the folder; a read-only server refuses all of it, and no write starts while another writes."""

import json
import subprocess
import sys
import textwrap
import time
import urllib.error
import urllib.request

import pytest
from fastapi.testclient import TestClient

from retrieval.serve.routes.files import READ_ONLY, place
from retrieval.serve.server import create_app
from tests.indexes import copied_index
from tests.paths import EXAMPLES, ROOT
from tests.retrieval.serve.browser import free_port, serving

LOCAL = "http://localhost"
ADDED = "bikes.mp4"  # not among the indexed clips
JOB_DEADLINE_S = 600  # a generous bound on one small run, so a stuck run fails the test instead of hanging it


@pytest.fixture
def videos(three_clips_indexed, tmp_path):
    return copied_index(three_clips_indexed, tmp_path / "videos")


@pytest.fixture
def client(videos):
    with TestClient(create_app(videos / ".convis", allow_writes=True), base_url=LOCAL) as test_client:
        yield test_client


def upload(client, name: str = ADDED) -> str:
    response = client.post("/uploads", files={"file": (name, (EXAMPLES / name).read_bytes(), "video/mp4")})
    assert response.status_code == 200, response.text
    return response.json()["anchor"]


def finished(client) -> dict:
    deadline = time.monotonic() + JOB_DEADLINE_S
    while (job := client.get("/index/job").json())["state"] == "running":
        assert time.monotonic() < deadline, job
        time.sleep(0.5)
    return job


def listed(client) -> dict[str, str]:
    return {f["path"]: f["status"] for f in client.get("/videos").json()["files"]}


def test_a_read_only_server_refuses_every_write(videos):
    with TestClient(create_app(videos / ".convis"), base_url=LOCAL) as client:
        ref = upload(client)
        answers = [client.post("/index/files", json={"uploads": [ref]}), client.delete("/files/cup.mp4"),
                   client.post("/index/runs", json={})]
        assert [a.status_code for a in answers] == [403, 403, 403]
        assert all(a.json() == {"error": READ_ONLY} for a in answers)
        assert client.get("/index/job").json() == {"state": "idle", "allow_writes": False}
    assert not (videos / "added").exists() and (videos / "cup.mp4").is_file()


@pytest.mark.slow
def test_an_added_clip_is_indexed_removed_and_stays_removed(client, videos):
    assert client.get("/index/job").json() == {"state": "idle", "allow_writes": True}
    response = client.post("/index/files", json={"uploads": [upload(client)]})
    assert response.status_code == 202, response.text
    assert response.json()["kind"] == "add" and response.json()["files"] == [f"added/{ADDED}"]
    job = finished(client)
    assert job["state"] == "done", job
    assert job["report"]["indexed"] == 1 and job["done"] == job["total"] == 1 and job["allow_writes"]
    assert listed(client)[f"added/{ADDED}"] == "ok"
    assert (videos / "added" / ADDED).read_bytes() == (EXAMPLES / ADDED).read_bytes()

    response = client.delete(f"/files/added/{ADDED}")
    assert response.status_code == 200 and response.json() == {"removed": [f"added/{ADDED}"]}
    assert f"added/{ADDED}" not in listed(client) and (videos / "added" / ADDED).is_file()
    assert client.delete(f"/files/added/{ADDED}").status_code == 404  # the index no longer lists it

    assert client.post("/index/runs", json={"retry_failed": False}).status_code == 202
    job = finished(client)
    assert job["state"] == "done" and job["kind"] == "reindex" and job["report"]["excluded"] == 1, job
    assert f"added/{ADDED}" not in listed(client)

    # adding the clip again is asking for it to be indexed again
    assert client.post("/index/files", json={"uploads": [upload(client)]}).status_code == 202
    assert finished(client)["state"] == "done"
    assert listed(client)[f"added/{ADDED}"] == "ok"


def test_one_run_at_a_time(client):
    assert client.post("/index/runs").status_code == 202
    second = client.post("/index/runs")
    assert second.status_code == 409 and "started from this app" in second.json()["error"]
    assert client.delete("/files/cup.mp4").status_code == 409
    assert finished(client)["state"] == "done"


def test_no_write_while_another_process_writes_the_index(client, videos, tmp_path):
    ready = tmp_path / "holding"
    code = f"""
        from retrieval.store.catalog import Catalog
        catalog = Catalog({str(videos / ".convis" / "catalog.duckdb")!r})
        open({str(ready)!r}, "w").close()
        import time
        time.sleep(120)
    """
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent(code)], cwd=ROOT)
    try:
        deadline = time.monotonic() + 60
        while not ready.exists():
            assert holder.poll() is None and time.monotonic() < deadline, "the holder did not start"
            time.sleep(0.1)
        answers = [client.post("/index/runs"), client.delete("/files/cup.mp4"),
                   client.post("/index/files", json={"uploads": [upload(client)]})]
        assert [a.status_code for a in answers] == [409, 409, 409]
        assert all(f"(process {holder.pid}) is writing this index" in a.json()["error"] for a in answers)
    finally:
        holder.kill()
        holder.wait()
    assert "cup.mp4" in listed(client) and not (videos / "added").exists()


def delete(url: str, **headers) -> tuple[int, dict]:
    request = urllib.request.Request(url, method="DELETE", headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as refused:
        return refused.code, json.loads(refused.read())


def test_a_page_on_another_port_of_the_same_host_cannot_remove_a_file(videos):
    with serving(videos / ".convis", allow_writes=True) as url:
        other = f"http://127.0.0.1:{free_port()}"
        for headers in ({"Origin": other}, {"Sec-Fetch-Site": "same-site"}):
            status, body = delete(f"{url}/files/cup.mp4", **headers)
            assert status == 403 and list(body) == ["error"], (headers, body)
        with TestClient(create_app(videos / ".convis"), base_url=LOCAL) as client:
            assert "cup.mp4" in listed(client)
        assert delete(f"{url}/files/cup.mp4", Origin=url) == (200, {"removed": ["cup.mp4"]})


# a backslash and "C:" are parts of a name on POSIX (tests/retrieval/serve/test_odd_names.py), paths on Windows
@pytest.mark.parametrize("folder", ["../x", "/tmp", ".hidden", "a/../b", "a//b", "a/"]
                         + (["a\\b", "C:/x"] if sys.platform == "win32" else []))
def test_a_folder_outside_the_root_or_hidden_is_refused(client, videos, folder):
    response = client.post("/index/files", json={"uploads": [upload(client)], "folder": folder})
    assert response.status_code == 422, response.text
    assert response.json()["error"].startswith("folder is not a servable path"), response.text
    assert client.get("/index/job").json()["state"] == "idle"
    assert sorted(p.name for p in videos.iterdir()) == [".convis", "campus_01.mp4", "campus_02.mp4", "cup.mp4"]


def test_a_folder_named_like_a_file_is_a_conflict(client):
    response = client.post("/index/files", json={"uploads": [upload(client)], "folder": "cup.mp4"})
    assert response.status_code == 409 and "cup.mp4 is a file" in response.json()["error"]
    assert client.get("/index/job").json()["state"] == "idle"


def test_a_folder_through_a_file_is_a_conflict(client):
    response = client.post("/index/files", json={"uploads": [upload(client)], "folder": "cup.mp4/new"})
    assert response.status_code == 409 and "a part of cup.mp4/new is a file" in response.json()["error"]
    assert client.get("/index/job").json()["state"] == "idle"


def test_a_folder_name_past_the_filesystem_limit_is_refused_in_one_line(client, videos):
    response = client.post("/index/files", json={"uploads": [upload(client)], "folder": "n" * 300})
    assert response.status_code == 400, response.text
    assert response.json()["error"].startswith("folder: a name in the path is too long for this filesystem")
    assert client.get("/index/job").json()["state"] == "idle"
    assert sorted(p.name for p in videos.iterdir()) == [".convis", "campus_01.mp4", "campus_02.mp4", "cup.mp4"]


@pytest.mark.parametrize("body", [{"retry_failed": 0}, {"retry_failed": "true"}, {"retry_failed": None},
                                  {"retry": True}])
def test_a_run_asked_for_with_a_value_of_another_type_or_an_unknown_field_is_not_started(client, body):
    response = client.post("/index/runs", json=body)
    assert response.status_code == 422 and next(iter(body)) in response.json()["error"], response.text
    assert client.get("/index/job").json()["state"] == "idle"


def test_clips_added_with_an_unknown_field_are_not_added(client, videos):
    response = client.post("/index/files", json={"uploads": [upload(client)], "folder": "added", "copy": True})
    assert response.status_code == 422 and "copy" in response.json()["error"]
    assert not (videos / "added").exists() and client.get("/index/job").json()["state"] == "idle"


def test_a_body_that_is_not_json_text_is_a_documented_400(client):
    response = client.post("/index/runs", content=b"\x80", headers={"Content-Type": "application/json"})
    assert response.status_code == 400 and set(response.json()) == {"error"}
    assert "400" in client.get("/openapi.json").json()["paths"]["/index/runs"]["post"]["responses"]
    assert client.get("/index/job").json()["state"] == "idle"


def test_bad_requests_are_refused_before_anything_changes(client):
    assert client.post("/index/files", json={"uploads": ["cup.mp4"]}).status_code == 422
    assert client.post("/index/files", json={"uploads": [".uploads/" + "0" * 32 + ".mp4"]}).status_code == 404
    assert client.delete("/files/nope.mp4").status_code == 404
    assert client.get("/index/job").json()["state"] == "idle"


def test_an_added_clip_never_replaces_another_file(tmp_path):
    source, folder = tmp_path / "upload.mp4", tmp_path / "added"
    folder.mkdir()
    source.write_bytes(b"new clip")
    (folder / "clip.mp4").write_bytes(b"another clip")
    assert place(source, folder, "clip.mp4") == folder / "clip (2).mp4"
    assert place(source, folder, "clip.mp4") == folder / "clip (2).mp4"  # the same bytes: the same file
    assert (folder / "clip.mp4").read_bytes() == b"another clip"
    assert sorted(p.name for p in folder.iterdir()) == ["clip (2).mp4", "clip.mp4"]  # no part file left
