"""The API's removed files: DELETE /files/{ref} takes a file out of every answer (listings, counts, queries),
GET /collection?status=removed lists it with when, and POST /files/{ref}/restore puts its stored vectors back at
once; the restore is a write, refused as DELETE is."""

import time
import urllib.error
import urllib.request

import pytest
from fastapi.testclient import TestClient

from retrieval.serve.routes.files import READ_ONLY
from retrieval.serve.server import create_app
from tests.indexes import copied_index
from tests.retrieval.serve.browser import free_port, serving

LOCAL = "http://localhost"
QUERY = {"anchor": "campus_01.mp4", "concepts": ["location"], "k": 10}


@pytest.fixture
def videos(three_clips_indexed, tmp_path):
    return copied_index(three_clips_indexed, tmp_path / "videos")


@pytest.fixture
def client(videos):
    with TestClient(create_app(videos / ".convis", allow_writes=True), base_url=LOCAL) as test_client:
        yield test_client


def shown(client, files_ok: int) -> dict:
    """Where a file can show up: the listing, the collection's units and counts, /health (once it has read the
    index with ``files_ok`` files), a query's hits."""
    units = client.get("/collection").json()
    query = client.post("/query", json=QUERY)
    assert query.status_code == 200, query.text
    return {"videos": {f["path"] for f in client.get("/videos").json()["files"]},
            "units": {item["path"] for item in units["items"]}, "ok": units["counts"]["ok"],
            "health": health(client, files_ok), "hits": {hit["path"] for hit in query.json()["hits"]}}


def health(client, files_ok: int) -> tuple[int, int]:
    """/health's files and units once it says ``files_ok`` (it reads the index a moment after it changes)."""
    deadline = time.monotonic() + 30
    while (said := client.get("/health").json())["files_ok"] != files_ok and time.monotonic() < deadline:
        time.sleep(0.1)
    return said["files_ok"], said["units"]


def test_a_removed_file_leaves_every_answer_and_the_undo_brings_it_back(client):
    before = shown(client, 3)
    assert "cup.mp4" in before["hits"] and before["ok"] == 3
    assert client.delete("/files/cup.mp4").json() == {"removed": ["cup.mp4"]}
    gone = shown(client, 2)
    assert all("cup.mp4" not in gone[where] for where in ("videos", "units", "hits"))
    assert gone["ok"] == 2 and gone["health"] == (2, before["health"][1] - 1)
    compared = client.post("/compare", json={"a": "campus_01.mp4", "b": "cup.mp4", "concepts": ["location"]})
    assert compared.status_code == 400 and "not in the index" in compared.json()["error"]  # scored by no signal

    removed = client.get("/collection", params={"status": "removed"}).json()
    (item,) = removed["items"]
    assert (item["path"], item["kept"], item["units"]) == ("cup.mp4", True, 1) and item["removed_at"]
    assert removed["counts"]["removed"] == 1 and removed["total"] == 1
    assert client.get("/collection", params={"status": "removed", "name": "campus"}).json()["total"] == 0

    restored = client.post("/files/cup.mp4/restore")
    assert restored.status_code == 200 and restored.json() == {"restored": ["cup.mp4"], "to_index": []}
    assert shown(client, 3) == before
    assert client.get("/collection", params={"status": "removed"}).json()["items"] == []
    again = client.post("/files/cup.mp4/restore")
    assert again.status_code == 404 and "not removed" in again.json()["error"]


def test_a_read_only_server_lists_removed_files_but_refuses_the_restore(client, videos):
    assert client.delete("/files/cup.mp4").status_code == 200
    with TestClient(create_app(videos / ".convis"), base_url=LOCAL) as read_only:
        assert [i["path"] for i in read_only.get("/collection?status=removed").json()["items"]] == ["cup.mp4"]
        refused = read_only.post("/files/cup.mp4/restore")
        assert refused.status_code == 403 and refused.json() == {"error": READ_ONLY}
        assert "/files/{ref}/restore" not in read_only.get("/openapi.json").json()["paths"]
    assert "/files/{ref}/restore" in client.get("/openapi.json").json()["paths"]


def restore(url: str, **headers) -> int:
    request = urllib.request.Request(url, method="POST", headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status
    except urllib.error.HTTPError as refused:
        return refused.code


def test_a_page_of_another_origin_cannot_restore_a_file(client, videos):
    assert client.delete("/files/cup.mp4").status_code == 200
    with serving(videos / ".convis", allow_writes=True) as url:
        other = f"http://127.0.0.1:{free_port()}"
        for headers in ({"Origin": other}, {"Sec-Fetch-Site": "cross-site"}):
            assert restore(f"{url}/files/cup.mp4/restore", **headers) == 403, headers
        assert restore(f"{url}/files/cup.mp4/restore", Origin=url) == 200
