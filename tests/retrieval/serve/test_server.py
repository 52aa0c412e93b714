"""The HTTP API of ``convis serve`` through FastAPI's TestClient, on the real example index."""

import io
import re
import shutil

import pytest
from fastapi.testclient import TestClient
from PIL import Image

from bench.tiny.vlm import build_qwen_vl
from retrieval.api import Engine, NoIndexError, QueryRequest
from retrieval.serve.errors import ApiError
from retrieval.serve.server import create_app
from retrieval.serve.state import safe_path
from retrieval.store.catalog import Catalog
from tests.locks import writer_holding
from tests.media import make_clip
from tests.paths import ROOT

LOCAL = "http://localhost"  # the app answers loopback host names only
EXPECTED_FILES = {"bigbuckbunny.mp4", "bikes.mp4", "box.mp4", "campus_01.mp4", "campus_02.mp4", "campus_03.mp4",
                  "campus_04.mp4", "carphone_pristine.mp4", "cup.mp4"}


@pytest.fixture(scope="module")
def client(example_index):
    with TestClient(create_app(example_index), base_url=LOCAL) as test_client:
        yield test_client


@pytest.fixture
def moved_index(example_index, tmp_path):
    """A copy of the example index whose root is a scratch folder with links leading outside it."""
    index = tmp_path / "index" / ".convis"
    shutil.copytree(example_index, index, ignore=shutil.ignore_patterns("scores.duckdb"))
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    make_clip(root / "inside.mp4", frames=20, fps=10)
    make_clip(outside / "secret.mp4", frames=20, fps=10)
    (root / "escape.mp4").symlink_to(outside / "secret.mp4")
    (root / "linked").symlink_to(outside, target_is_directory=True)
    (root / "notes.txt").write_text("not a video")
    with Catalog(index / "catalog.duckdb") as catalog:
        catalog.set_setting("root", str(root))
    return index


def test_health_reports_the_index(client, example_videos):
    data = client.get("/health").json()
    assert data["status"] == "ok" and data["files_ok"] == 9 and data["units"] == 9
    assert data["root"] == example_videos.resolve().name and data["index_dir"] == ".convis"
    assert data["reranker"] is None and data["indexers"][0].startswith("efficientnet-lite0")


def test_videos_lists_indexed_files_and_units(client):
    files = client.get("/videos").json()["files"]
    assert {f["path"] for f in files} == EXPECTED_FILES
    for f in files:
        assert f["status"] == "ok" and f["media"] == f"/media/{f['path']}"
        assert len(f["units"]) == 1 and f["units"][0]["start"] == 0.0


def playable(path: str) -> str:
    """The link a result plays from: box.mp4 has an H.264 slice browsers refuse to decode, so its preview."""
    return f"/previews/{path}" if path == "box.mp4" else f"/media/{path}"


@pytest.mark.parametrize("anchor, concepts", [
    ("campus_01.mp4", ["location"]),
    ("box.mp4", ["location=3", "main-objects=1"]),
])
def test_query_ranks_exactly_as_the_engine(client, example_index, example_videos, anchor, concepts):
    expected = Engine(example_index).query(QueryRequest(example_videos / anchor, concepts, k=6))
    response = client.post("/query", json={"anchor": anchor, "concepts": concepts, "k": 6})
    assert response.status_code == 200, response.text
    data = response.json()
    assert [h["path"] for h in data["hits"]] == [h.path for h in expected.hits]
    assert [h["total"] for h in data["hits"]] == [round(h.total, 4) for h in expected.hits]
    assert data["anchor"] == anchor and data["anchor_media"] == playable(anchor)
    assert all(h["media"] == playable(h["path"]) and h["strip"].startswith(f"/strips/{h['path']}")
               for h in data["hits"])


def test_concepts_may_be_objects_with_weights(client):
    as_text = client.post("/query", json={"anchor": "box.mp4", "concepts": ["location=0.75", "main-objects=0.25"]})
    as_objects = client.post("/query", json={"anchor": "box.mp4", "concepts": [
        {"name": "location", "weight": 3}, {"name": "main objects", "weight": 1}]})
    assert as_objects.json()["hits"] == as_text.json()["hits"]
    assert [c["weight"] for c in as_objects.json()["concepts"]] == [0.75, 0.25]


def test_location_query_puts_the_campus_pieces_first(client):
    hits = client.post("/query", json={"anchor": "campus_01.mp4", "concepts": ["location"], "k": 5}).json()["hits"]
    assert sorted(h["path"] for h in hits[:3]) == ["campus_02.mp4", "campus_03.mp4", "campus_04.mp4"]


def test_compare_gives_the_scores_the_query_showed(client):
    query = client.post("/query", json={"anchor": "box.mp4", "concepts": ["location=3", "main-objects=1"]}).json()
    hit = next(h for h in query["hits"] if h["path"] == "cup.mp4")
    data = client.post("/compare", json={"a": "box.mp4", "b": "cup.mp4",
                                         "concepts": ["location=3", "main-objects=1"]}).json()
    assert {c["key"]: c["score"] for c in data["concepts"]} == hit["scores"]
    assert data["total"] == hit["total"] and data["rank"] == hit["rank"]
    assert data["reranker"] is None and data["b_start"] == hit["start"] and data["b_end"] == hit["end"]
    assert data["a_strip"].startswith("/strips/box.mp4") and data["b_media"] == "/media/cup.mp4"


def test_compare_with_the_anchor_itself_is_refused(client):
    response = client.post("/compare", json={"a": "cup.mp4", "b": "cup.mp4", "concepts": ["location"]})
    assert response.status_code == 400 and "other than the anchor" in response.json()["error"]


def test_strips_and_thumbnails_are_small_jpegs(client):
    data = client.get("/strips/campus_02.mp4", params={"end": 20, "n": 8}).json()
    times = [f["time"] for f in data["frames"]]
    assert len(times) == 8 and times == sorted(times) and times[-1] <= 20
    image = client.get(data["frames"][3]["src"])
    assert image.status_code == 200 and image.headers["content-type"] == "image/jpeg"
    picture = Image.open(io.BytesIO(image.content))
    assert picture.format == "JPEG" and min(picture.size) <= 128
    assert (picture.width, picture.height) == (data["frames"][3]["width"], data["frames"][3]["height"])
    assert client.get("/thumbs/campus_02.mp4", params={"end": 20, "n": 8, "i": 8}).status_code == 404


def test_media_serves_byte_ranges_for_seeking(client, example_videos):
    whole = client.get("/media/campus_02.mp4")
    assert whole.status_code == 200 and whole.content == (example_videos / "campus_02.mp4").read_bytes()
    part = client.get("/media/campus_02.mp4", headers={"Range": "bytes=100-199"})
    assert part.status_code == 206 and part.content == whole.content[100:200]


def test_uploaded_anchor_can_be_queried_and_browsed(client, tmp_path):
    clip = make_clip(tmp_path / "mine.mp4", frames=30, fps=10, size=(96, 64))
    with clip.open("rb") as fh:
        upload = client.post("/uploads", files={"file": ("my clip.mp4", fh, "video/mp4")})
    assert upload.status_code == 200, upload.text
    ref = upload.json()["anchor"]
    assert ref.startswith(".uploads/") and upload.json()["name"] == "my clip.mp4"
    query = client.post("/query", json={"anchor": ref, "concepts": ["location"], "k": 3})
    assert query.status_code == 200, query.text
    assert len(query.json()["hits"]) == 3 and query.json()["anchor"] == ref
    assert client.get(upload.json()["strip"]).json()["frames"]
    assert client.get(f"/media/{ref}").content == clip.read_bytes()
    compare = client.post("/compare", json={"a": ref, "b": query.json()["hits"][0]["path"], "concepts": ["location"]})
    assert compare.status_code == 200 and compare.json()["rank"] == 1


def test_upload_must_be_a_video_name(client):
    response = client.post("/uploads", files={"file": ("notes.txt", b"hello", "text/plain")})
    assert response.status_code == 415 and "not a video" in response.json()["error"]
    assert client.get("/media/.uploads/" + "0" * 32 + ".mp4").status_code == 404


@pytest.mark.parametrize("body, status, message", [
    ({"anchor": "campus_01.mp4", "concepts": ["location=abc"]}, 400, "must be a number"),
    ({"anchor": "missing.mp4", "concepts": ["location"]}, 404, "no such file"),
    ({"anchor": "campus_01.mp4", "concepts": ["location"], "rerank": True}, 400, "no reranker"),
    ({"anchor": "../campus_01.mp4", "concepts": ["location"]}, 422, ".."),
])
def test_bad_queries_get_a_one_line_json_error(client, body, status, message):
    response = client.post("/query", json=body)
    assert response.status_code == status and message in response.json()["error"]


def test_invalid_bodies_are_rejected_by_the_schema(client):
    assert client.post("/query", json={"anchor": "cup.mp4", "concepts": [], "k": 5}).status_code == 422
    assert client.post("/query", json={"anchor": "cup.mp4", "concepts": ["location"], "k": 0}).status_code == 422


@pytest.mark.parametrize("url, status", [
    ("/media/inside.mp4", 200),
    ("/media/escape.mp4", 403),  # a symlink inside the root that resolves outside it
    ("/media/linked/secret.mp4", 403),  # a symlinked folder leading outside
    ("/thumbs/escape.mp4", 403),
    ("/strips/linked/secret.mp4", 403),
    ("/media/..%2Foutside%2Fsecret.mp4", 422),
    ("/media/%2e%2e/outside/secret.mp4", 422),
    ("/media/sub/..%2F..%2Foutside/secret.mp4", 422),
    ("/media/%2Fetc%2Fpasswd", 422),
    ("/media//etc/passwd", 422),
    ("/media/..%5Coutside%5Csecret.mp4", 422),
    ("/media/.convis/catalog.duckdb", 422),
    ("/media/notes.txt", 404),
    ("/media/nothing.mp4", 404),
])
def test_media_serves_only_videos_inside_the_root(moved_index, url, status):
    with TestClient(create_app(moved_index), base_url=LOCAL) as client:
        response = client.get(url)
    assert response.status_code == status, response.text
    if status != 200:
        assert "error" in response.json()


def test_safe_path_refuses_what_leaves_the_root(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    make_clip(root / "ok.mp4", frames=10, fps=10)
    (root / "out.mp4").symlink_to(tmp_path / "elsewhere.mp4")
    assert safe_path(root.resolve(), "ok.mp4") == (root / "ok.mp4").resolve()
    for ref in ["", "/ok.mp4", "C:/ok.mp4", "../root/ok.mp4", "a/../ok.mp4", "./ok.mp4", "a//ok.mp4",
                "ok.mp4\x00", ".hidden.mp4"]:
        with pytest.raises(ApiError):
            safe_path(root.resolve(), ref)
    with pytest.raises(ApiError) as outside:
        safe_path(root.resolve(), "out.mp4")
    assert outside.value.http_status == 403


def test_busy_catalog_without_a_snapshot_is_a_503_with_a_retry_hint(moved_index):
    for snapshot in moved_index.glob("snapshot*"):
        snapshot.unlink()  # a first index run that has published nothing yet
    app = create_app(moved_index)
    with writer_holding(moved_index / "catalog.duckdb"), TestClient(app, base_url=LOCAL) as client:
        for response in (client.get("/health"), client.get("/videos"),
                         client.post("/query", json={"anchor": "inside.mp4", "concepts": ["location"]})):
            assert response.status_code == 503, response.text
            assert "retry" in response.json()["error"] and response.headers["Retry-After"] == "5"
    with TestClient(app, base_url=LOCAL) as client:
        assert client.get("/health").status_code == 200  # the same server recovers once the writer is gone


def test_busy_catalog_with_a_snapshot_still_answers(example_index, tmp_path):
    index = tmp_path / ".convis"
    shutil.copytree(example_index, index, ignore=shutil.ignore_patterns("scores.duckdb"))
    if not any(index.glob("snapshot*")):
        pytest.skip("this index publishes no snapshot for readers")
    with writer_holding(index / "catalog.duckdb"), TestClient(create_app(index), base_url=LOCAL) as client:
        assert client.get("/health").json()["files_ok"] == 9
        response = client.post("/query", json={"anchor": "campus_01.mp4", "concepts": ["location"], "k": 3})
        assert response.status_code == 200 and len(response.json()["hits"]) == 3
        again = client.post("/query", json={"anchor": "campus_01.mp4", "concepts": ["location"], "k": 3}).json()
        assert len(again["notices"]) == len(response.json()["notices"])  # notices do not pile up per request


def test_missing_index_is_refused_at_start(tmp_path):
    with pytest.raises(NoIndexError):
        create_app(tmp_path / ".convis")


def test_openapi_and_ui(client):
    schema = client.get("/openapi.json").json()
    assert {"/health", "/videos", "/uploads", "/query", "/compare", "/strips/{ref}", "/thumbs/{ref}",
            "/media/{ref}"} <= set(schema["paths"])
    assert {"QueryIn", "CompareIn", "ConceptIn"} <= set(schema["components"]["schemas"])
    assert client.get("/docs").status_code == 404  # its page would fetch scripts from a CDN
    page = client.get("/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert "http://" not in page.text and "https://" not in page.text
    linked = re.findall(r'(?:src|href)="([^"]+)"', page.text)
    assert {"/ui/app.js", "/ui/app.css", "/ui/gallery.css"} <= set(linked)
    assert all(url.startswith(("/", "data:")) for url in linked), linked  # the app's own files, nothing external
    for name, kind in (("app.js", "text/javascript"), ("app.css", "text/css"), ("gallery.css", "text/css")):
        asset = client.get(f"/ui/{name}")
        assert asset.status_code == 200 and asset.headers["content-type"].startswith(kind)
        assert "http://" not in asset.text and "https://" not in asset.text
    assert client.get("/ui/../server.py").status_code == 404 and client.get("/ui/secret.txt").status_code == 404


@pytest.mark.slow
def test_server_reranker_rescores_queries_and_compares(example_index, tmp_path):
    qwen = str(build_qwen_vl(tmp_path / "qwen2-vl-tiny"))
    index = tmp_path / ".convis"
    shutil.copytree(example_index, index, ignore=shutil.ignore_patterns("scores.duckdb"))
    with TestClient(create_app(index, reranker=qwen), base_url=LOCAL) as client:
        assert client.get("/health").json()["reranker"] == qwen
        recall = client.post("/query", json={"anchor": "box.mp4", "concepts": ["location"], "k": 3}).json()
        reranked = client.post("/query", json={"anchor": "box.mp4", "concepts": ["location"], "k": 3,
                                               "rerank": True, "rerank_top": 3}).json()
        assert reranked["reranker"] and {h["path"] for h in reranked["hits"]} == {h["path"] for h in recall["hits"]}
        assert all(1.0 <= h["ratings"]["location"] <= 5.0 and h["recall_scores"] for h in reranked["hits"])
        pair = client.post("/compare", json={"a": "box.mp4", "b": "cup.mp4", "concepts": ["location"],
                                             "rerank": True}).json()
        assert pair["reranker"] == reranked["reranker"] and 1.0 <= pair["concepts"][0]["rating"] <= 5.0
        assert pair["b_start"] is None and pair["b_strip"] == "/strips/cup.mp4?n=8"  # the LMM saw the whole file


def test_the_web_ui_is_served_from_its_package_files(client):
    # the UI lives in retrieval/serve/ui as real .html/.css/.js files, served as they are
    ui = ROOT / "retrieval" / "serve" / "ui"
    assert client.get("/").text == (ui / "index.html").read_text()
    for name in ("app.js", "app.css", "gallery.css"):
        assert client.get(f"/ui/{name}").text == (ui / name).read_text()


@pytest.mark.parametrize("path, body", [
    ("/query", {"anchor": "campus_01.mp4", "concepts": ["locaton"]}),
    ("/compare", {"a": "box.mp4", "b": "cup.mp4", "concepts": [{"name": "locaton", "weight": 1}]}),
])
def test_a_typo_of_a_convis_concept_is_refused_unless_free_text_is_asked_for(client, path, body):
    refused = client.post(path, json=body)
    assert refused.status_code == 400
    assert refused.json()["error"] == ("unknown concept 'locaton'; did you mean location? (send \"free_text\": true, "
                                       "or tick \"free text\" in the web UI, to ask for it as written)")
    accepted = client.post(path, json={**body, "free_text": True})
    assert accepted.status_code == 200 and [c["key"] for c in accepted.json()["concepts"]] == ["locaton"]
    assert 'id="free-text"' in client.get("/").text and "free_text: state.free" in client.get("/ui/app.js").text


def test_query_names_each_concepts_signal_and_when_concepts_share_one(client):
    data = client.post("/query", json={"anchor": "box.mp4", "concepts": ["location", "main-objects"], "k": 5}).json()
    assert [c["signal"].split(":")[0] for c in data["concepts"]] == ["efficientnet-lite0"] * 2
    assert any(n.startswith("location and main-objects both use the whole-clip similarity of efficientnet-lite0")
               for n in data["notices"])
    pair = client.post("/compare", json={"a": "box.mp4", "b": "cup.mp4", "concepts": ["location", "main-objects"]})
    # the same query behind it, the same notices, in web words; compare adds what a whole-clip signal means
    assert set(data["notices"]) <= set(pair.json()["notices"]) and not any("--" in n for n in pair.json()["notices"])


def test_a_composed_query_over_http_ranks_the_change_and_refuses_a_bad_one(demo_index, example_index):
    with TestClient(create_app(demo_index), base_url=LOCAL) as demo:
        response = demo.post("/query", json={"anchor": "box.mp4", "change": "a cup instead of a box", "k": 3})
        assert response.status_code == 200, response.text
        data = response.json()
        assert data["hits"][0]["path"] == "cup.mp4" and data["change"]["text"] == "a cup instead of a box"
        assert set(data["hits"][0]["composed"]) == {"stay", "change", "weight"}
        blank = demo.post("/query", json={"anchor": "box.mp4", "change": "  ", "k": 3})
        assert blank.status_code == 422 and "at least one concept, or a change" in blank.json()["error"]
        beside = demo.post("/query", json={"anchor": "box.mp4", "concepts": ["location"], "change": " ", "k": 3})
        assert beside.status_code == 400 and "--change needs a text" in beside.json()["error"]
    with TestClient(create_app(example_index), base_url=LOCAL) as plain:  # no signal reads text
        refused = plain.post("/query", json={"anchor": "box.mp4", "change": "a cup", "k": 3})
        assert refused.status_code == 400 and "needs a signal that reads text" in refused.json()["error"]


def test_most_different_over_http_ranks_the_same_scores_ascending(example_index):
    with TestClient(create_app(example_index), base_url=LOCAL) as client:
        body = {"anchor": "campus_01.mp4", "concepts": ["location"], "k": 100}
        alike = client.post("/query", json=body).json()
        unlike = client.post("/query", json={**body, "most_different": True}).json()
    assert unlike["order"] == "most different first" and alike["order"] == "most similar first"
    assert [h["path"] for h in unlike["hits"]] == [h["path"] for h in alike["hits"]][::-1]
