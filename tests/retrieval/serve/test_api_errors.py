"""Refusals are bounded, one-line JSON: no server error for odd input, and no absolute path of the server's."""

import shutil

import pytest
from fastapi.testclient import TestClient

from retrieval.serve.fields import MAX_CONCEPTS, MAX_REF_CHARS
from retrieval.serve.server import create_app
from retrieval.store.catalog import Catalog

LOCAL = "http://localhost"


@pytest.fixture(scope="module")
def scratch(example_index, example_videos, tmp_path_factory):
    """The example index over a scratch root holding two indexed clips and an unreadable one."""
    base = tmp_path_factory.mktemp("private-location")
    index, root = base / "index" / ".convis", base / "videos"
    shutil.copytree(example_index, index, ignore=shutil.ignore_patterns("scores.duckdb"))
    root.mkdir()
    shutil.copy(example_videos / "cup.mp4", root / "cup.mp4")
    shutil.copy(example_videos / "box.mp4", root / "box.mp4")
    (root / "bad.mp4").write_bytes(b"not a video" * 100)
    with Catalog(index / "catalog.duckdb") as catalog:
        catalog.set_setting("root", str(root))
    with TestClient(create_app(index), base_url=LOCAL, raise_server_exceptions=False) as client:
        yield client, base


@pytest.mark.parametrize("method, url, body", [
    ("GET", "/health", None),
    ("GET", "/videos", None),
    ("POST", "/query", {"anchor": "cup.mp4", "concepts": ["location"]}),
    ("POST", "/compare", {"a": "cup.mp4", "b": "box.mp4", "concepts": ["location"]}),
    ("POST", "/query", {"anchor": "bad.mp4", "concepts": ["location"]}),
    ("POST", "/compare", {"a": "cup.mp4", "b": "bad.mp4", "concepts": ["location"]}),
    ("GET", "/strips/bad.mp4", None),
    ("GET", "/media/missing.mp4", None),
])
def test_no_answer_reveals_where_the_server_keeps_its_files(scratch, method, url, body):
    client, base = scratch
    response = client.request(method, url, json=body)
    assert response.status_code < 500, response.text
    assert str(base) not in response.text and str(base.resolve()) not in response.text


def test_health_names_the_root_by_its_folder_name(scratch):
    client, _ = scratch
    assert client.get("/health").json()["root"] == "videos"


@pytest.mark.parametrize("method, url, body", [
    ("GET", "/media/" + "x" * 5000 + ".mp4", None),
    ("GET", "/strips/" + "d/" * 2500 + "x.mp4", None),
    ("POST", "/query", {"anchor": "x" * 5000, "concepts": ["location"]}),
    ("POST", "/compare", {"a": "cup.mp4", "b": "x" * 5000, "concepts": ["location"]}),
])
def test_an_overlong_ref_is_refused_not_a_server_error(scratch, method, url, body):
    client, _ = scratch
    response = client.request(method, url, json=body)
    assert response.status_code == 422 and str(MAX_REF_CHARS) in response.json()["error"]


def test_a_ref_just_under_the_bound_is_looked_up(scratch):
    client, _ = scratch
    response = client.get("/media/" + "x" * (MAX_REF_CHARS - 4) + ".mp4")  # longer than a file name may be
    assert response.status_code == 404 and "no such file" in response.json()["error"]


def test_the_number_of_concepts_in_one_request_is_bounded(scratch):
    client, _ = scratch
    concepts = [f"thing {i}" for i in range(MAX_CONCEPTS + 1)]
    response = client.post("/query", json={"anchor": "cup.mp4", "concepts": concepts, "free_text": True})
    assert response.status_code == 422 and "concepts" in response.json()["error"]


def test_unknown_routes_answer_with_the_json_error_body(scratch):
    client, _ = scratch
    response = client.get("/nothing/here")
    assert response.status_code == 404 and response.json() == {"error": "Not Found"}


QUERY = {"anchor": "cup.mp4", "concepts": ["location"]}
COMPARE = {"a": "cup.mp4", "b": "box.mp4", "concepts": ["location"]}


@pytest.mark.parametrize("url, body, field", [
    ("/query", {**QUERY, "free_text": 0}, "free_text"),
    ("/query", {**QUERY, "most_different": "true"}, "most_different"),
    ("/query", {**QUERY, "k": "5"}, "k"),
    ("/query", {**QUERY, "k": 5.5}, "k"),
    ("/query", {**QUERY, "k": True}, "k"),
    ("/query", {**QUERY, "start": "0"}, "start"),
    ("/query", {**QUERY, "concepts": [{"name": "location", "weight": "1"}]}, "weight"),
    ("/query", {**QUERY, "mostdifferent": True}, "mostdifferent"),  # a misspelt option is not ignored
    ("/export/gallery", {**QUERY, "rerank": 0}, "rerank"),
    ("/compare", {**COMPARE, "symmetric": 1}, "symmetric"),
    ("/compare", {**COMPARE, "free_text": "false"}, "free_text"),
    ("/compare", {**COMPARE, "concepts": [{"name": "location", "weight": 1, "w": 2}]}, "w"),
])
def test_a_value_of_another_type_or_an_unknown_field_is_refused(scratch, url, body, field):
    client, _ = scratch
    response = client.post(url, json=body)
    assert response.status_code == 422, response.text
    assert field in response.json()["error"]


@pytest.mark.parametrize("url, body", [
    ("/query", {**QUERY, "k": 5.0, "start": 0, "concepts": [{"name": "location", "weight": 1}]}),
    ("/compare", {**COMPARE, "a_start": 0, "concepts": [{"name": "location", "weight": 2}]}),
])
def test_numbers_are_taken_as_json_schema_counts_them(scratch, url, body):
    """An integer is a number, and 5.0 an integer: what the schema accepts, the server does."""
    client, _ = scratch
    response = client.post(url, json=body)
    assert response.status_code == 200, response.text


@pytest.mark.parametrize("body, error", [
    ({"anchor": "cup.mp4", "concepts": [{"name": "location", "weight": 0}]},
     "weight of concept 1 must be greater than or equal to 0.001"),
    ({"anchor": "cup.mp4", "concepts": [5]}, "concept 1 must be a text or an object as the schema says"),
    ({"concepts": ["location"], "k": 0, "colour": 1},
     "anchor is required; k must be greater than or equal to 1; colour is not a field this request takes"),
])
def test_a_body_off_the_schema_is_refused_in_plain_words(scratch, body, error):
    client, _ = scratch
    response = client.post("/query", json=body)
    assert response.status_code == 422 and response.json()["error"] == error


def test_api_refusals_speak_http_words_not_cli_flags(scratch):
    client, _ = scratch
    mode = client.get("/search", params={"text": "cup", "mode": "fuzzy"})
    assert (mode.status_code, mode.json()["error"]) == (422, "mode must be one of vector, keyword, hybrid")
    truncated = client.post("/query", content=b'{"anchor": "cup.mp4", "conc',
                            headers={"content-type": "application/json"})
    assert truncated.status_code == 422
    assert truncated.json()["error"].startswith("the request body is not valid JSON: ")
    for response in (client.get("/search", params={"text": "cup", "where": "nosuch = 3"}),
                     client.post("/query", json={"anchor": "cup.mp4", "concepts": ["location"],
                                                 "where": ["width >>= 3"]})):
        error = response.json()["error"]
        assert response.status_code == 400 and error.startswith("where") and "--" not in error, error
