"""Tags from the app: ``POST /files/{ref}/tags`` adds and removes items of a file's ``tags`` field through the
engine (a ``where`` filter reads them at once), result and collection cards carry them, and a read-only server or
another origin is refused."""

from fastapi.testclient import TestClient

from retrieval.serve.routes.files import READ_ONLY
from retrieval.serve.server import create_app
from tests.indexes import copied_index

LOCAL = "http://localhost"


def collection_tags(client) -> dict[str, list[str]]:
    return {item["path"]: item["tags"] for item in client.get("/collection").json()["items"]}


def test_tags_are_added_removed_shown_on_cards_and_filtered(three_clips_indexed, tmp_path):
    videos = copied_index(three_clips_indexed, tmp_path / "videos")
    with TestClient(create_app(videos / ".convis", allow_writes=True), base_url=LOCAL) as client:
        answer = client.post("/files/cup.mp4/tags", json={"add": ["kitchen", "red cup", "kitchen"]})
        assert answer.status_code == 200, answer.text
        assert answer.json() == {"path": "cup.mp4", "tags": ["kitchen", "red cup"]}
        assert collection_tags(client)["cup.mp4"] == ["kitchen", "red cup"]
        body = {"anchor": "campus_01.mp4", "concepts": ["location"], "where": ["tags has kitchen"]}
        hits = client.post("/query", json=body).json()["hits"]
        assert {hit["path"] for hit in hits} == {"cup.mp4"} and hits[0]["tags"] == ["kitchen", "red cup"]
        answer = client.post("/files/cup.mp4/tags", json={"remove": ["kitchen"]})
        assert answer.json()["tags"] == ["red cup"] and collection_tags(client)["cup.mp4"] == ["red cup"]
        assert client.post("/files/cup.mp4/tags", json={"remove": ["red cup"]}).json()["tags"] == []
        assert all(tags == [] for tags in collection_tags(client).values())
        assert client.post("/files/cup.mp4/tags", json={"add": ["a,b"]}).status_code == 422
        assert client.post("/files/nothing.mp4/tags", json={"add": ["x"]}).status_code == 404
        other = client.post("/files/cup.mp4/tags", json={"add": ["x"]}, headers={"Origin": "http://evil.example"})
        assert other.status_code == 403


def test_a_read_only_server_refuses_tags(three_clips_indexed):
    with TestClient(create_app(three_clips_indexed / ".convis"), base_url=LOCAL) as client:
        answer = client.post("/files/cup.mp4/tags", json={"add": ["kitchen"]})
        assert answer.status_code == 403 and answer.json() == {"error": READ_ONLY}


def test_the_schema_and_the_server_agree_on_blank_ends_of_a_tag():
    """A tag's ends are blank by str.strip()'s rule (U+0085 and U+001C included) in the schema as on the server: a
    pattern written with "\\s" means other characters to a JSON Schema validator than to pydantic."""
    import re

    from pydantic import TypeAdapter, ValidationError

    from retrieval.serve.tags import Tag

    server = TypeAdapter(Tag)
    pattern = server.json_schema()["pattern"]
    assert "\\s" not in pattern and "\\S" not in pattern  # ECMA-262's \s is not str.isspace()
    schema = re.compile(pattern)  # on explicit classes ECMA-262 and Python agree
    for text in ("goal", "red cup", "\x85goal", "goal\x1c", " goal", "a,b", "\u3000x"):
        try:
            server.validate_python(text)
            accepted = True
        except ValidationError:
            accepted = False
        assert accepted == bool(schema.search(text)) == (text == text.strip() and "," not in text), repr(text)
