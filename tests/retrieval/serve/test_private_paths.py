"""No answer names where the server keeps its files: the index's root and folder appear by name only, and clips
by their paths relative to the root (README: the API)."""

from pathlib import Path

from fastapi.testclient import TestClient

from retrieval.serve.server import create_app
from retrieval.store.catalog import Catalog
from retrieval.store.snapshots import CATALOG_NAME

LOCAL = "http://localhost"


def test_no_answer_names_a_server_folder(demo_index, example_videos):
    with Catalog(demo_index / CATALOG_NAME, read_only=True) as catalog:
        root = catalog.setting("root")
    folders = {root, str(Path(root).resolve()), str(demo_index), str(demo_index.resolve())}
    with TestClient(create_app(demo_index), base_url=LOCAL) as client:
        upload = client.post("/uploads", files={"file": ("mine.mp4", (example_videos / "cup.mp4").read_bytes())})
        ref = upload.json()["anchor"]
        answers = {
            "upload": upload,
            "query": client.post("/query", json={"anchor": "box.mp4", "concepts": ["location"], "k": 3}),
            "query with a change": client.post("/query", json={"anchor": "box.mp4", "change": "a cup", "k": 3}),
            "query of an upload": client.post("/query", json={"anchor": ref, "concepts": ["location"], "k": 3}),
            "compare": client.post("/compare", json={"a": "box.mp4", "b": "cup.mp4", "concepts": ["location"]}),
            "compare an upload": client.post("/compare", json={"a": ref, "b": "box.mp4", "concepts": ["location"]}),
            "search": client.get("/search", params={"text": "a hand holding a cup", "k": 3}),
            "videos": client.get("/videos"),
            "collection": client.get("/collection"),
            "health": client.get("/health"),
            "evidence": client.get("/evidence/cup.mp4", params={"segment": 0}),
        }
    for name, answer in answers.items():
        assert answer.status_code == 200, (name, answer.text)
        named = [folder for folder in folders if folder in answer.text]
        assert not named, f"{name} names {named[0]}: {answer.text[:300]}"
    roots = {answers[name].json()["root"] for name in ("query", "compare", "search", "videos", "collection")}
    assert roots == {Path(root).name}  # the root by its folder's name, and every clip relative to it
    listed = {f["path"] for f in answers["videos"].json()["files"]}
    assert {h["path"] for h in answers["query"].json()["hits"]} <= listed
