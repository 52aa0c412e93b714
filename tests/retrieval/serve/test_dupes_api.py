"""``GET /dupes``: the engine's near-duplicate groups over HTTP, the root named but not its path, inputs bounded."""

import pytest
from fastapi.testclient import TestClient

from retrieval.api import DupesRequest, Engine
from retrieval.serve.server import create_app

LOCAL = "http://localhost"


@pytest.fixture(scope="module")
def client(near_copies):
    with TestClient(create_app(near_copies[0] / ".convis"), base_url=LOCAL) as test_client:
        yield test_client


def test_dupes_answers_as_the_engine(client, near_copies):
    answer = client.get("/dupes", params={"where": ["name glob 'c*'"], "keep": "resolution"})
    assert answer.status_code == 200, answer.text
    want = Engine(near_copies[0] / ".convis").dupes(DupesRequest(where=["name glob 'c*'"], keep="resolution"))
    data = answer.json()
    shown = [{**g, "members": [{k: v for k, v in m.items() if k not in ("poster", "media")} for m in g["members"]]}
             for g in data["groups"]]
    assert shown == want.as_dict()["groups"] and data["drop"] == want.drop
    assert data["root"] == near_copies[0].name and data["threshold_by"] == "auto"


@pytest.mark.parametrize("params, status", [({"threshold": 2}, 422), ({"level": "scene"}, 422),
                                            ({"indexer": "nope"}, 400), ({"where": ["colour = red"]}, 400)])
def test_bad_input_is_refused(client, params, status):
    assert client.get("/dupes", params=params).status_code == status


def test_the_web_view_is_served_and_each_member_has_a_poster_that_loads(client):
    page = client.get("/ui/dupes.html")
    assert page.status_code == 200 and 'fetch("/dupes"' in page.text
    member = client.get("/dupes").json()["groups"][0]["members"][0]
    poster = client.get(member["poster"])
    assert poster.status_code == 200 and poster.headers["content-type"] == "image/jpeg"
    assert client.get(member["media"]).status_code == 200
