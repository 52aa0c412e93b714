"""What one request can cost is bounded: reads that cost seconds are origin-checked as writes are, bodies are
capped by their declared length and while they stream, and schema-valid requests are answered or refused in a line."""

import pytest
from fastapi.testclient import TestClient

from retrieval.serve.body_limit import MAX_BODY_BYTES
from retrieval.serve.server import create_app

SERVER = "http://127.0.0.1:8000"
COSTLY = ["/dupes?threshold=0.50001&level=unit", "/search?text=a+cup", "/strips/cup.mp4", "/thumbs/cup.mp4",
          "/frame/cup.mp4?t=0", "/evidence/cup.mp4?segment=0", "/previews/cup.mp4"]


@pytest.fixture(scope="module")
def client(example_index):
    with TestClient(create_app(example_index), base_url=SERVER) as test_client:
        yield test_client


@pytest.mark.parametrize("path", COSTLY)
def test_a_read_that_costs_seconds_is_refused_from_another_origin(client, path):
    refused = client.get(path, headers={"Origin": "http://evil.example"})
    assert refused.status_code == 403
    assert refused.json()["error"].startswith("requests that cost seconds from another origin are refused")
    assert client.get(path, headers={"Sec-Fetch-Site": "cross-site"}).status_code == 403  # an <img> elsewhere


@pytest.mark.parametrize("path", COSTLY)
@pytest.mark.parametrize("headers", [{}, {"Origin": SERVER}, {"Sec-Fetch-Site": "same-origin"}])
def test_the_same_page_and_clients_that_are_no_page_are_answered(client, path, headers):
    assert client.get(path, headers=headers).status_code != 403


def test_a_body_declared_over_the_cap_is_refused_before_it_is_read(client):
    too_big = client.post("/query", content=b"{}", headers={"Content-Type": "application/json",
                                                             "Content-Length": str(300 << 20)})
    assert too_big.status_code == 413
    assert too_big.json() == {"error": f"request body larger than {MAX_BODY_BYTES >> 20} MiB "
                                       f"(Content-Length: {300 << 20})"}


def test_a_body_without_a_length_stops_at_the_cap_while_it_streams(client):
    sent = []

    def chunks():
        for _ in range(64):  # 4 MiB in all
            sent.append(1)
            yield b" " * (64 << 10)

    too_big = client.post("/query", content=chunks(), headers={"Content-Type": "application/json"})
    assert too_big.status_code == 413 and list(too_big.json()) == ["error"], too_big.text
    small = client.post("/query", json={"anchor": "cup.mp4", "concepts": ["location"], "k": 1})
    assert small.status_code == 200, small.text


def test_options_on_restore_advertises_the_restore_route_not_delete(client):
    assert client.options("/files/x.mp4/restore").headers["allow"] == "POST"
    assert client.options("/files/x.mp4").headers["allow"] == "DELETE"



@pytest.mark.parametrize(("path", "said"), [
    ("/dupes?indexer=0", "--indexer '0' is not a visual indexer of this index (it has: efficientnet-lite0)"),
    ("/search?text=cup&concept=location&mode=hybrid", "mode hybrid and concept do not go together"),
])
def test_a_schema_valid_request_the_index_cannot_answer_is_a_one_line_400_as_the_cli_says(client, path, said):
    refused = client.get(path)
    assert refused.status_code == 400 and refused.json()["error"].startswith(said) and "\n" not in refused.text
