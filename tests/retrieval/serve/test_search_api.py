"""``GET /search``: text search over HTTP, the engine's ranking with media links, its inputs bounded."""


import pytest
from fastapi.testclient import TestClient

from retrieval.api import Engine, SearchRequest
from retrieval.search.text_query import MAX_TEXT_CHARS
from retrieval.serve.routes.search import MAX_SEARCH_K
from retrieval.serve.server import create_app
from tests.indexes import CAPTIONS, indexed_copies

LOCAL = "http://localhost"  # the app answers loopback host names only
CUP = "a hand holding a cup"


@pytest.fixture(scope="module")
def captioned(tmp_path_factory, example_videos):
    """Three example clips indexed with EfficientNet-Lite0 and their captions."""
    videos = indexed_copies(tmp_path_factory.mktemp("captioned"), ("cup.mp4", "box.mp4", "campus_01.mp4"),
                            ["efficientnet-lite0"], captions=CAPTIONS)
    return videos / ".convis"


@pytest.fixture(scope="module")
def client(captioned):
    with TestClient(create_app(captioned), base_url=LOCAL) as test_client:
        yield test_client


def test_search_ranks_exactly_as_the_engine_with_media_links(client, captioned):
    answer = client.get("/search", params={"text": CUP, "k": 2})
    assert answer.status_code == 200, answer.text
    data = answer.json()
    want = Engine(captioned).search(SearchRequest(CUP, k=2)).as_dict()
    assert [(h["path"], h["total"]) for h in data["hits"]] == [(h["path"], h["total"]) for h in want["hits"]]
    assert data["hits"][0]["path"] == "cup.mp4" and data["text"] == CUP and data["root"] == "videos"
    assert data["hits"][0]["media"] == "/media/cup.mp4" and data["hits"][0]["strip"].startswith("/strips/cup.mp4")
    assert client.get(data["hits"][0]["strip"]).status_code == 200


@pytest.mark.parametrize("params", [{}, {"text": ""}, {"text": "x" * (MAX_TEXT_CHARS + 1)},
                                    {"text": CUP, "k": 0}, {"text": CUP, "k": MAX_SEARCH_K + 1}])
def test_search_inputs_are_bounded(client, params):
    answer = client.get("/search", params=params)
    assert answer.status_code == 422 and list(answer.json()) == ["error"]


def test_blank_text_is_a_one_line_400(client):
    answer = client.get("/search", params={"text": "   "})
    assert answer.status_code == 400 and "give a text" in answer.json()["error"]


def test_an_index_without_a_text_tower_is_a_one_line_400(example_index):
    with TestClient(create_app(example_index), base_url=LOCAL) as client:
        answer = client.get("/search", params={"text": CUP})
    assert answer.status_code == 400
    assert answer.json()["error"].startswith("no signal here can search by text")


def test_search_of_one_concepts_descriptions_ranks_as_the_engine(client, captioned):
    answer = client.get("/search", params={"text": "a paved square outdoors", "concept": "location", "k": 3})
    assert answer.status_code == 200, answer.text
    data = answer.json()
    want = Engine(captioned).search(SearchRequest("a paved square outdoors", k=3, concept="location")).as_dict()
    assert [(h["path"], h["total"]) for h in data["hits"]] == [(h["path"], h["total"]) for h in want["hits"]]
    assert data["hits"][0]["path"] == "campus_01.mp4" and list(data["signals"]) == ["text#location"]
    missing = client.get("/search", params={"text": CUP, "concept": "lighting"})  # every ConViS one is described
    assert missing.status_code == 400 and "no descriptions of lighting" in missing.json()["error"]


def test_requests_answered_at_the_same_time_each_get_their_own_answer(client):
    """No lock holds the engine: queries and searches run at once, and each answer (its notices included) is the
    one it gets alone."""
    from concurrent.futures import ThreadPoolExecutor

    asks = [("/search", {"text": CUP, "k": 2}), ("/query", {"anchor": "box.mp4", "concepts": ["location"], "k": 1}),
            ("/search", {"text": "a paved square outdoors", "k": 3}),
            ("/query", {"anchor": "cup.mp4", "concepts": ["main-objects"], "k": 5})]  # fewer than k: a notice

    def ask(item):
        path, body = item
        answer = client.get(path, params=body) if path == "/search" else client.post(path, json=body)
        assert answer.status_code == 200, answer.text
        return answer.json()

    alone = [ask(item) for item in asks]
    def fewer(answer) -> bool:
        return any(" results, not " in n for n in answer["notices"])

    assert fewer(alone[3]) and not fewer(alone[1])
    with ThreadPoolExecutor(max_workers=8) as pool:
        together = list(pool.map(ask, asks * 4))
    assert together == alone * 4
