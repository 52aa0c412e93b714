"""GET /fields gives each field's most common values among the indexed files, with how many files hold each and
the `where` condition that keeps them: the app's filter chips, whose conditions the server takes as they are."""

from fastapi.testclient import TestClient

from retrieval.api import Engine
from retrieval.serve.facets import MAX_VALUES, facets
from retrieval.serve.server import create_app
from tests.indexes import copied_index

LOCAL = "http://localhost"


def test_fields_count_each_value_and_name_its_condition(three_clips_indexed, tmp_path):
    videos = copied_index(three_clips_indexed, tmp_path / "videos")
    Engine(videos / ".convis").tag(["cup.mp4", "campus_01.mp4"], ["tags=kitchen,red", "rating=4"])
    with TestClient(create_app(videos / ".convis"), base_url=LOCAL) as client:
        fields = {f["name"]: f["values"] for f in client.get("/fields").json()["fields"]}
        assert fields["tags"] == [{"value": "kitchen", "count": 2, "where": "tags has kitchen"},
                                  {"value": "red", "count": 2, "where": "tags has red"}]
        assert fields["rating"] == [{"value": "4", "count": 2, "where": "rating = 4"}]
        assert fields["path"] == [] and fields["duration"] == []  # one value a file: nothing to group
        assert sum(v["count"] for v in fields["codec"]) == 3 and fields["fps"]
        for field in ("codec", "fps", "width"):  # each chip's condition keeps exactly the files it counts
            for value in fields[field]:
                assert len(kept(client, value["where"])) == value["count"], value


def kept(client, where: str) -> set[str]:
    """The files a query keeps under ``where``: asked from two anchors, as a query never returns its own."""
    paths = set()
    for anchor in ("cup.mp4", "campus_01.mp4"):
        body = {"anchor": anchor, "concepts": ["location"], "where": [where], "k": 50}
        paths |= {hit["path"] for hit in client.post("/query", json=body).json()["hits"]}
    return paths


def test_only_the_most_common_values_of_a_field_are_offered():
    class File:
        status, width, height, fps, codec = "ok", None, None, None, None

        def __init__(self, n):
            self.path, self.fields = f"f{n}.mp4", {"team": f"t{n % (MAX_VALUES + 5)}"}

    found = facets([File(n) for n in range(200)], ["team"])
    assert len(found["team"]) == MAX_VALUES and found["team"][0]["count"] == 8
    assert set(found) == {"team"}
