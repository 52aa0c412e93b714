"""The server under load: /health answers from what the server keeps while the engine is held, heavy requests run
in a bounded pool (503 with Retry-After once its queue is full), and reads run at the same time."""

import os
import shutil
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor, wait

import pytest
from fastapi.testclient import TestClient

from retrieval.api import Engine
from retrieval.serve.health import KeptIndex, KeptListing, note_change
from retrieval.serve.server import create_app
from retrieval.store import index_dir as store

LOCAL = "http://localhost"
QUERY = {"anchor": "box.mp4", "concepts": ["location"], "k": 3}
HANG_S = 20  # a request still unanswered after this long waits for the held engine (never, when it is right)


@pytest.fixture
def held_catalog(monkeypatch):
    """``arm()``: from then on every opening of the catalog to read it (a query's, an info's) waits for
    ``release``; ``entered`` says one began."""
    entered, release = threading.Event(), threading.Event()
    original = store.Catalog

    def held(*args, **kwargs):
        entered.set()
        release.wait(60)
        return original(*args, **kwargs)

    def arm():
        monkeypatch.setattr(store, "Catalog", held)

    yield arm, entered, release
    release.set()


def test_health_answers_while_a_query_holds_the_engine(example_index, held_catalog):
    arm, entered, release = held_catalog
    with TestClient(create_app(example_index), base_url=LOCAL) as client, ThreadPoolExecutor(2) as requests:
        arm()  # from now on the engine's catalog reads wait: the query below holds the engine busy
        query = requests.submit(client.post, "/query", json=QUERY)
        assert entered.wait(HANG_S)
        health = requests.submit(client.get, "/health")
        answered, _ = wait([health], timeout=HANG_S)
        still_held = not query.done()
        release.set()
        assert health in answered, "/health waited for the engine"
        assert still_held and query.result().status_code == 200
    data = health.result().json()
    assert health.result().status_code == 200 and data["files_ok"] == 9 and data["state_age_s"] >= 0


def test_videos_come_from_memory_while_the_index_stays_as_it_is(example_index, held_catalog):
    arm, entered, release = held_catalog
    with TestClient(create_app(example_index), base_url=LOCAL) as client, ThreadPoolExecutor(1) as requests:
        first = client.get("/videos")
        arm()
        again = requests.submit(client.get, "/videos")
        answered, _ = wait([again], timeout=HANG_S)
        release.set()
    assert again in answered and not entered.is_set()  # answered without opening the catalog
    assert again.result().content == first.content and len(first.json()["files"]) == 9


def test_a_full_queue_answers_503_with_retry_after(example_index, monkeypatch):
    gate, entered = threading.Event(), threading.Event()
    original = Engine.query

    def held_query(self, request):
        entered.set()
        assert gate.wait(60)
        return original(self, request)

    monkeypatch.setattr(Engine, "query", held_query)
    app = create_app(example_index, workers=1, queue=1)
    with TestClient(app, base_url=LOCAL) as client, ThreadPoolExecutor(2) as requests:
        running = requests.submit(client.post, "/query", json=QUERY)
        assert entered.wait(HANG_S)
        waiting = requests.submit(client.post, "/query", json=QUERY)
        deadline = time.monotonic() + HANG_S
        while app.state.convis.workers.admitted < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        refused = client.post("/query", json=QUERY)
        health = client.get("/health")
        gate.set()
        assert running.result().status_code == 200 and waiting.result().status_code == 200
    assert refused.status_code == 503 and int(refused.headers["Retry-After"]) >= 1
    assert set(refused.json()) == {"error", "retry_after"} and "capacity" in refused.json()["error"]
    assert refused.json()["retry_after"] == int(refused.headers["Retry-After"])
    assert health.status_code == 200  # a probe is no heavy request: never refused for a full queue


def test_two_reads_proceed_at_the_same_time(example_index, monkeypatch):
    together = threading.Barrier(2, timeout=HANG_S)  # each read waits inside the engine until the other is there
    query, search = Engine.query, Engine.search

    def meeting(verb):
        def verb_met(self, request):
            together.wait()
            return verb(self, request)
        return verb_met

    monkeypatch.setattr(Engine, "query", meeting(query))
    monkeypatch.setattr(Engine, "search", meeting(search))
    with TestClient(create_app(example_index, workers=2), base_url=LOCAL) as client, \
            ThreadPoolExecutor(2) as requests:
        first = requests.submit(client.post, "/query", json=QUERY)
        second = requests.submit(client.post, "/query", json={**QUERY, "anchor": "cup.mp4"})
        assert first.result().status_code == 200 and second.result().status_code == 200


def test_the_503_and_its_header_are_documented(example_index):
    spec = TestClient(create_app(example_index), base_url=LOCAL).get("/openapi.json").json()
    for path, method in [("/query", "post"), ("/search", "get"), ("/videos", "get"), ("/uploads", "post"),
                         ("/strips/{ref}", "get"), ("/evidence/{ref}", "get")]:
        busy = spec["paths"][path][method]["responses"]["503"]
        assert "Retry-After" in busy["headers"], path
        assert busy["content"]["application/json"]["schema"]["$ref"].endswith("/ErrorOut")


# -- what /health keeps ----------------------------------------------------------------------------
def counted_reads():
    reads = []

    def read(notices):
        reads.append(1)
        return {"n": len(reads)}

    return reads, read


def test_the_kept_reading_is_read_again_only_when_the_index_changes(example_index, tmp_path):
    index = tmp_path / ".convis"
    shutil.copytree(example_index, index)
    reads, read = counted_reads()
    kept = KeptIndex(index, read)
    assert kept.latest()[0] is None
    kept.refresh()
    kept.look()
    kept.look()
    assert len(reads) == 1 and kept.latest()[0].summary == {"n": 1}
    for name in ("catalog.duckdb", "snapshot.duckdb"):  # what a commit, or a run publishing, does to them
        if (index / name).exists():
            stamp = (index / name).stat()
            os.utime(index / name, ns=(stamp.st_atime_ns, stamp.st_mtime_ns + 1_000_000_000))
            kept.look()
    assert len(reads) == 1 + sum((index / name).exists() for name in ("catalog.duckdb", "snapshot.duckdb"))
    assert kept.latest()[0].summary == {"n": len(reads)}


def test_the_listing_is_read_once_for_each_state_of_the_index(example_index, tmp_path):
    index = tmp_path / ".convis"
    shutil.copytree(example_index, index)
    reads, read = counted_reads()
    listing = KeptListing(index, lambda notices: [read(notices)])
    made = []
    assert listing.ready("page") is None
    for _ in range(3):
        assert listing.answer("page", lambda files, notices: made.append(files) or len(made)) == 1
    assert listing.ready("page") == 1 and listing.get([]) == [{"n": 1}] and len(reads) == 1
    stamp = (index / "catalog.duckdb").stat()
    os.utime(index / "catalog.duckdb", ns=(stamp.st_atime_ns, stamp.st_mtime_ns + 1_000_000_000))
    assert listing.ready("page") is None  # made for the index as it was
    assert listing.get([]) == [{"n": 2}] and listing.answer("page", lambda files, notices: "again") == "again"


def test_a_change_this_process_made_is_read_even_when_the_files_look_the_same(example_index, tmp_path):
    index = tmp_path / ".convis"
    shutil.copytree(example_index, index)
    reads, read = counted_reads()
    listing = KeptListing(index, lambda notices: [read(notices)])
    assert listing.get([]) == [{"n": 1}] and listing.get([]) == [{"n": 1}]
    note_change(index)  # a removal whose commit left every stat as it was (timestamps tick every few ms)
    assert listing.get([]) == [{"n": 2}] and len(reads) == 2


def test_requests_asking_at_once_share_one_read_of_the_listing(example_index):
    reading, release, reads = threading.Event(), threading.Event(), []

    def read(notices):
        reads.append(1)
        reading.set()
        assert release.wait(HANG_S)
        return ["a file"]

    listing = KeptListing(example_index, read)
    with ThreadPoolExecutor(2) as pool:
        first = pool.submit(listing.get, [])
        assert reading.wait(HANG_S)
        second = pool.submit(listing.get, [])
        early, _ = wait([second], timeout=0.2)  # it waits for the read under way
        release.set()
        assert first.result(HANG_S) is second.result(HANG_S)
    assert not early and len(reads) == 1


def test_a_failed_reading_is_kept_and_tried_again(example_index):
    outcomes = [RuntimeError("busy"), {"ok": True}]

    def read(notices):
        outcome = outcomes.pop(0)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    kept = KeptIndex(example_index, read)
    assert str(kept.refresh().error) == "busy"
    kept.look()  # nothing changed, but the last read failed
    assert kept.latest()[0].summary == {"ok": True} and kept.latest()[0].error is None


def test_the_watching_thread_looks_and_reads_nothing_unchanged(example_index):
    reads, read = counted_reads()
    looks = []

    class Counted(KeptIndex):
        def look(self):
            looks.append(1)
            super().look()

    kept = Counted(example_index, read, poll_s=0.01)
    kept.refresh()
    kept.start()
    try:
        deadline = time.monotonic() + HANG_S
        while len(looks) < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
    finally:
        kept.close()
    assert len(looks) >= 3 and len(reads) == 1 and kept.latest()[0].summary == {"n": 1}


EXITING = """
import sys, time
from pathlib import Path
from retrieval.serve.health import KeptIndex

done = Path(sys.argv[1])
def read(notices):
    time.sleep(1.0)  # a catalog read in progress when the interpreter exits
    done.write_text("read to its end")
    return {}
KeptIndex(Path(sys.argv[2]), read).start()
time.sleep(0.2)
"""


def test_the_interpreter_exit_lets_a_watchers_read_end(tmp_path, example_index):
    done = tmp_path / "done"
    subprocess.run([sys.executable, "-c", EXITING, str(done), str(example_index)], check=True, timeout=60)
    assert done.read_text() == "read to its end"
