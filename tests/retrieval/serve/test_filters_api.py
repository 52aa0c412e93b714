"""`where` on the HTTP API: /search and /query rank only the units a filter keeps, as the engine does; GET /fields
lists what a filter may name; a bad filter is a 400 with the one line the CLI prints."""

import pytest
from fastapi.testclient import TestClient

from retrieval.api import Engine, SearchRequest
from retrieval.serve.server import create_app

LOCAL = "http://localhost"
CUP = "a hand holding a cup"


@pytest.fixture(scope="module")
def client(demo_index):
    with TestClient(create_app(demo_index), base_url=LOCAL) as test_client:
        yield test_client


def test_search_takes_repeated_where_and_ranks_as_the_engine(client, demo_index):
    where = ["name in box.mp4,bikes.mp4,cup.mp4", "name != cup.mp4"]
    answer = client.get("/search", params={"text": CUP, "k": 5, "where": where})
    assert answer.status_code == 200, answer.text
    want = Engine(demo_index).search(SearchRequest(CUP, k=5, where=where)).as_dict()
    assert [h["path"] for h in answer.json()["hits"]] == [h["path"] for h in want["hits"]]
    assert {h["path"] for h in answer.json()["hits"]} == {"box.mp4", "bikes.mp4"}


def test_query_takes_where_in_its_body(client):
    body = {"anchor": "cup.mp4", "concepts": ["main-objects"], "k": 5, "where": ["name glob 'campus_0[12].mp4'"]}
    answer = client.post("/query", json=body)
    assert answer.status_code == 200, answer.text
    assert {h["path"] for h in answer.json()["hits"]} == {"campus_01.mp4", "campus_02.mp4"}


def test_compare_ranks_b_among_the_units_its_where_keeps(client):
    body = {"a": "cup.mp4", "b": "campus_02.mp4", "concepts": ["main-objects"]}
    everything = client.post("/compare", json=body)
    narrowed = client.post("/compare", json={**body, "where": ["name glob 'campus_0[12].mp4'"]})
    assert everything.status_code == 200 and narrowed.status_code == 200, narrowed.text
    assert narrowed.json()["rank"] in (1, 2) and narrowed.json()["concepts"] == everything.json()["concepts"]
    left_out = client.post("/compare", json={**body, "where": ["name = campus_01.mp4"]})
    assert left_out.status_code == 400 and "campus_02.mp4 is not among the units" in left_out.text


def test_fields_lists_the_built_in_fields_and_operators(client):
    answer = client.get("/fields")
    assert answer.status_code == 200, answer.text
    data = answer.json()
    # each field also lists its most common values with their counts (GET /fields' facets)
    assert [{k: f[k] for k in ("name", "kind")} for f in data["fields"][:4]] == [
        {"name": "path", "kind": "text"}, {"name": "folder", "kind": "text"}, {"name": "name", "kind": "text"},
        {"name": "duration", "kind": "number"}]
    assert all(isinstance(f["values"], list) for f in data["fields"])
    assert data["operators"] == ["=", "!=", "<", "<=", ">", ">=", "in", "glob", "has"]


@pytest.mark.parametrize("where, says", [("colour = red", "unknown field 'colour'"),
                                         ("duration > long", "duration is a number"),
                                         ("duration glob 1*", "duration is a number field; it takes = != < <= > >= in"),
                                         ("width has 320", "width is a number field")])
def test_a_bad_filter_is_a_400_with_one_line(client, where, says):
    answer = client.get("/search", params={"text": CUP, "where": where})
    assert answer.status_code == 400 and says in answer.text and "SELECT" not in answer.text
