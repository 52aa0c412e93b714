"""Clips whose names hold characters a POSIX filesystem allows but URLs and Windows treat specially (a colon, a
backslash, a newline) are served like any other: their media, strips, thumbnails, lines and evidence answer 200
when the ref is quoted, as the API's own URLs quote it."""

import shutil
import sys
from urllib.parse import quote

import pytest
from fastapi.testclient import TestClient

from retrieval.engine import Engine
from retrieval.pipeline.settings import IndexSettings
from retrieval.serve.server import create_app
from tests.indexes import EXAMPLES, indexed_copies

LOCAL = "http://localhost"
ODD = ("a:b.mp4", "c:\\d.mp4", "back\\slash.mp4", "new\nline.mp4")

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="these names are not legal on Windows")


@pytest.fixture(scope="module")
def odd_index(tmp_path_factory):
    videos = indexed_copies(tmp_path_factory.mktemp("odd"), ("cup.mp4",), ["efficientnet-lite0"])
    for name in ODD:
        shutil.copy(EXAMPLES / "campus_01.mp4", videos / name)
    Engine(videos / ".convis").index(videos, ["efficientnet-lite0"], IndexSettings(workers=1))
    return videos


@pytest.fixture(scope="module")
def client(odd_index):
    with TestClient(create_app(odd_index / ".convis"), base_url=LOCAL) as test_client:
        yield test_client


def test_odd_names_are_listed_as_they_are(client):
    listed = {f["path"] for f in client.get("/videos").json()["files"]}
    assert set(ODD) <= listed


@pytest.mark.parametrize("name", ODD)
def test_every_per_file_route_serves_an_odd_name(client, name):
    ref = quote(name)
    answers = {
        "media": client.get(f"/media/{ref}"),
        "strips": client.get(f"/strips/{ref}", params={"n": 2}),
        "lines": client.get(f"/lines/{ref}"),
        "evidence": client.get(f"/evidence/{ref}", params={"segment": 0}),
    }
    for route, answer in answers.items():
        assert answer.status_code == 200, (route, answer.text)
    assert answers["strips"].json()["ref"] == name
    thumb = client.get(answers["strips"].json()["frames"][0]["src"])
    assert thumb.status_code == 200 and thumb.headers["content-type"] == "image/jpeg"


def test_a_query_by_an_odd_name_answers_with_its_urls(client):
    answer = client.post("/query", json={"anchor": "new\nline.mp4", "concepts": ["location"], "k": 5})
    assert answer.status_code == 200, answer.text
    hit = next(h for h in answer.json()["hits"] if h["path"] == "cup.mp4")
    assert client.get(hit["media"]).status_code == 200


def test_paths_that_climb_or_hide_are_still_refused(client):
    for ref in ("..%2Fx.mp4", ".convis/catalog.duckdb", "%2Fetc%2Fpasswd", "a/../../x.mp4"):
        assert client.get(f"/media/{ref}").status_code in (400, 403, 404, 422), ref
