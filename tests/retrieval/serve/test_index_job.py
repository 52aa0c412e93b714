"""The web app's index runs and the server following them: a server killed mid-run leaves the run going on to its
end, and a server started later shows its report; a server stopping stops its run cleanly, and the next run
resumes; every file committed stays indexed either way."""

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from retrieval.api import Engine
from retrieval.pipeline.settings import IndexSettings
from retrieval.serve.index_job import GONE, LEFT, RECORD_NAME, RUNNER, STOPPED, IndexJob, IndexJobs, _parser
from retrieval.serve.server import create_app
from retrieval.store.snapshots import writer_pid
from tests.indexes import copied_index
from tests.paths import EXAMPLES, ROOT

LOCAL = "http://localhost"
OLD = {"cup.mp4", "campus_01.mp4", "campus_02.mp4"}  # indexed already
NEW = ("bikes.mp4", "box.mp4", "carphone_pristine.mp4", "bigbuckbunny.mp4")  # for the run to index
DEADLINE_S = 600  # a generous bound on one small run, so a stuck run fails the test instead of hanging it


@pytest.fixture
def videos(three_clips_indexed, tmp_path):
    folder = copied_index(three_clips_indexed, tmp_path / "videos")
    for name in NEW:
        shutil.copy(EXAMPLES / name, folder / name)
    return folder


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def call(url: str, body: dict | None = None) -> tuple[int, dict]:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def until(what, check, poll_s: float = 0.2):
    deadline = time.monotonic() + DEADLINE_S
    while not (found := check()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(poll_s)
    return found


def answers(url: str):
    try:
        return call(url)[1]
    except OSError:  # not listening yet
        return None


def recorded_pid(index_dir) -> int | None:
    try:
        return json.loads((index_dir / RECORD_NAME).read_text())["pid"]
    except (OSError, ValueError, KeyError):
        return None


def end_child(index_dir) -> None:
    """Kill a run's child still going (a test that failed early): it has no parent to stop it."""
    pid = recorded_pid(index_dir)
    try:
        if pid and RUNNER.encode() in open(f"/proc/{pid}/cmdline", "rb").read():
            os.kill(pid, signal.SIGKILL)
    except OSError:
        pass


def planned(job: dict) -> bool:
    """The run knows the files it has to embed (or has ended)."""
    return job["state"] != "running" or job["total"] is not None


def statuses(index_dir) -> dict[str, tuple[str, str | None]]:
    return {f.path: (f.status, f.error) for f in Engine(index_dir).files()}


def test_a_run_goes_on_to_its_end_when_the_server_following_it_is_killed(videos, tmp_path):
    index_dir, port, log = videos / ".convis", free_port(), tmp_path / "server.log"
    base = f"http://127.0.0.1:{port}"
    with open(log, "wb") as out:
        server = subprocess.Popen([sys.executable, str(ROOT / "cli.py"), "serve", str(videos), "--allow-writes",
                                   "--port", str(port)], stdout=out, stderr=subprocess.STDOUT, cwd=ROOT)
    try:
        until("the server", lambda: answers(base + "/health"))
        code, started = call(base + "/index/runs", {})
        assert code == 202, started
        # once the run knows its files it is embedding them: the server is killed before it can be told of any
        running = until("the run's start", lambda: planned(j := call(base + "/index/job")[1]) and j)
        os.kill(server.pid, signal.SIGKILL)
        server.wait()
        assert running["state"] == "running" and running["total"] == len(NEW), running
        until("the run to close its catalog", lambda: writer_pid(index_dir / "catalog.duckdb") is None)
        stored = statuses(index_dir)
        with TestClient(create_app(index_dir, allow_writes=True), base_url=LOCAL) as client:  # a server started later
            job = until("the run's end", lambda: (j := client.get("/index/job").json())["state"] != "running" and j)
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
        end_child(index_dir)
    assert stored == {name: ("ok", None) for name in OLD | set(NEW)}
    said = log.read_text(errors="replace")
    assert "Traceback" not in said and "Broken pipe" not in said, said
    assert job["id"] == started["id"] and job["kind"] == "reindex" and job["state"] == "done", job
    assert job["report"]["indexed"] == len(NEW) and job["report"]["failed"] == [] and job["done"] == len(NEW)
    assert LEFT in job["notes"]  # the child was still at work when its reader went away


def test_a_server_stopping_mid_run_stops_it_cleanly_and_the_next_run_resumes(videos):
    index_dir = videos / ".convis"
    try:
        with TestClient(create_app(index_dir, allow_writes=True), base_url=LOCAL) as client:
            assert client.post("/index/runs", json={}).status_code == 202
            until("a file committed", lambda: client.get("/index/job").json()["done"] >= 1, 0.05)
        # leaving the client stopped the server, and the server its run
        with TestClient(create_app(index_dir, allow_writes=True), base_url=LOCAL) as client:
            job = client.get("/index/job").json()
    finally:
        end_child(index_dir)
    assert job["state"] == "failed" and job["error"] == STOPPED, job
    stored = statuses(index_dir)
    assert set(stored.values()) == {("ok", None)} and OLD < set(stored) <= OLD | set(NEW)

    report = Engine(index_dir).index(videos, settings=IndexSettings(workers=1))
    assert report.indexed == len(OLD | set(NEW)) - len(stored) and report.failed == []
    assert report.unchanged == len(stored)


def test_a_recorded_run_whose_process_is_gone_has_failed(tmp_path):
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    record = {"id": "abc", "kind": "add", "files": ["added/a.mp4"], "state": "running", "total": 2, "done": 1,
              "current": "added/a.mp4", "notes": [], "report": None, "error": None, "pid": gone.pid}
    (tmp_path / RECORD_NAME).write_text(json.dumps(record))
    jobs = IndexJobs(tmp_path)
    assert jobs.running() is None
    assert jobs.last.as_dict() == {"id": "abc", "kind": "add", "state": "failed", "total": 2, "done": 1,
                                   "current": "added/a.mp4", "files": ["added/a.mp4"], "report": None,
                                   "error": GONE, "notes": []}

    (tmp_path / RECORD_NAME).write_text('{"id": "abc", "kind": "add", "fi')  # cut short: no run to show
    assert jobs.last is None and jobs.running() is None


def test_the_childs_command_line_reads_back_whatever_the_paths_are():
    refs = ["-x/a.mp4", "added/--kind=b.mp4"]  # a folder named "-x" is a folder the app may add to
    job = IndexJob("add", refs)
    args = _parser().parse_args(job.arguments(Path("/-i"), Path("/-r"), True, refs))
    assert (args.file, args.include, args.kind, args.job_id) == (refs, refs, "add", job.id)
    assert args.index_dir == Path("/-i") and args.root == Path("/-r") and args.retry_failed
