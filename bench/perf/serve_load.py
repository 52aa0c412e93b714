"""`convis serve` under load, as the issue's clients met it: a live server over a scratch copy of the examples'
index, each of its routes asked alone first (the baseline), then 20 client threads each asking /query, /search,
/videos and /health in turn, N requests a thread, while `convis index` runs add files to the index one after
another.  Each route's latency (p50, p99, max), its errors and its 503s (the server at capacity) are a row.

The clients are threads of this process, on the same cores as the server and the index runs: what a route costs
here is what a client on a busy machine waits, its own scheduling included.
"""

from __future__ import annotations

import http.client
import json
import math
import os
import statistics
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Sequence
from urllib.parse import urlencode, urlsplit

from bench.perf.cli_start import CLI, EXAMPLE_CAPTIONS, EXAMPLES, ROOT, command_env, index_command
from bench.perf.config import Footage, PerfConfig, Progress
from bench.perf.sections.serve import ServeLoadResult
from bench.perf.serve_start import first_health, free_port, still_running, until_warm

ALONE_RUNS = 5  # each route asked alone this many times (after one request that warms it)
WRITER_BATCH = 2  # files each index run adds (hard links under new names: decoded and embedded as new files)
REQUEST_TIMEOUT_S = 120.0
INDEX_TIMEOUT_S = 600.0


@dataclass(frozen=True)
class Route:
    name: str  # what the table calls it
    method: str
    target: str  # path and query
    body: bytes | None = None


ROUTES = (
    Route("/query", "POST", "/query", json.dumps({"anchor": "box.mp4", "concepts": ["main-action"]}).encode()),
    Route("/search", "GET", "/search?" + urlencode({"text": "a hand holding a cup"})),
    Route("/videos", "GET", "/videos"),
    Route("/health", "GET", "/health"),
)
QUERY = ROUTES[0].name  # the route the in-flight target is judged on


def run_serve_load(config: PerfConfig, footage: Footage, progress: Progress) -> list[ServeLoadResult]:
    """The section's rows: each route alone, then under the load (``config.serve_threads`` threads of
    ``config.serve_requests`` requests each) while index runs write."""
    folder, index_dir = footage.scratch / "serve-videos", footage.scratch / "serve-videos" / ".convis"
    progress(f"serve: indexing a copy of {EXAMPLES}")
    link_examples(folder)
    index_once(folder, index_dir)
    progress("serve: starting `convis serve` and waiting until it is warm")
    with serving(index_dir, footage.scratch / "serve-load.log") as url:
        rows = [alone_row(route, time_alone(url, route, ALONE_RUNS)) for route in ROUTES]
        progress(f"serve: {config.serve_threads} threads x {config.serve_requests} requests while index runs write")
        with index_runs(folder, index_dir) as writer:
            answers, wall = load(url, ROUTES, config.serve_threads, config.serve_requests)
        rows += load_rows(answers, wall, writer.said())
    return rows


# -- the index the server reads, and the runs writing it -----------------------------------------
def link_examples(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for clip in sorted(EXAMPLES.glob("*.mp4")):
        if not (folder / clip.name).exists():
            os.link(clip, folder / clip.name)


def _index_args(folder: Path, index_dir: Path) -> list[str]:
    """The demo's `convis index` (a visual signal and the captions' text signal) over ``folder``."""
    return [sys.executable, str(CLI), *index_command(index_dir, folder), "--captions", str(EXAMPLE_CAPTIONS)]


def index_once(folder: Path, index_dir: Path) -> subprocess.CompletedProcess:
    done = subprocess.run(_index_args(folder, index_dir), cwd=ROOT, env=command_env(), capture_output=True,
                          text=True, timeout=INDEX_TIMEOUT_S)
    if done.returncode != 0:
        raise RuntimeError(f"indexing {folder} failed: {(done.stderr.strip().splitlines() or [''])[-1]}")
    return done


class IndexRuns:
    """`convis index` runs one after another, each adding ``WRITER_BATCH`` files, until stopped."""

    def __init__(self, folder: Path, index_dir: Path):
        self.folder, self.index_dir = folder, index_dir
        self.runs, self.added, self.failed = 0, 0, ""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="serve-load-writer", daemon=True)

    def _loop(self) -> None:
        clips = sorted(EXAMPLES.glob("*.mp4"))
        while not self._stop.is_set():
            for i in range(WRITER_BATCH):
                clip = clips[(self.added + i) % len(clips)]
                os.link(clip, self.folder / f"written-{self.added + i:04d}-{clip.name}")
            self.added += WRITER_BATCH
            try:
                index_once(self.folder, self.index_dir)
            except (RuntimeError, subprocess.TimeoutExpired) as exc:
                self.failed = str(exc)
                return
            self.runs += 1

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(INDEX_TIMEOUT_S)  # the run under way finishes: the index is left consistent

    def said(self) -> str:
        ended = f"; a run failed: {self.failed}" if self.failed else ""
        return f"while {self.runs} index run(s) finished, {self.added} file(s) added{ended}"


@contextmanager
def index_runs(folder: Path, index_dir: Path) -> Iterator[IndexRuns]:
    writer = IndexRuns(folder, index_dir)
    writer.start()
    try:
        yield writer
    finally:
        writer.stop()


# -- the server ----------------------------------------------------------------------------------
@contextmanager
def serving(index_dir: Path, log: Path) -> Iterator[str]:
    """A `convis serve` process over ``index_dir`` (its log in ``log``), answering and warm; its URL."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with open(log, "w") as log_file:  # not a pipe: unread, a full one would stall the server's logging
        server = subprocess.Popen([sys.executable, str(CLI), "serve", "--index-dir", str(index_dir), "--port",
                                   str(port)], cwd=ROOT, env=command_env(), stdout=log_file, stderr=log_file)
    try:
        until_warm(url, first_health(url, server, time.perf_counter(), log), server, log)
        yield url
        still_running(server, log)
    finally:
        server.terminate()
        server.wait(30)


# -- the clients ---------------------------------------------------------------------------------
Answer = tuple[float, int]  # seconds, status (-1: no answer: the connection failed or timed out)


def ask(connection: http.client.HTTPConnection, route: Route) -> int:
    headers = {"Content-Type": "application/json"} if route.body is not None else {}
    connection.request(route.method, route.target, body=route.body, headers=headers)
    answer = connection.getresponse()
    answer.read()
    return answer.status


def timed(connection: http.client.HTTPConnection, route: Route) -> Answer:
    started = time.perf_counter()
    try:
        status = ask(connection, route)
    except (OSError, http.client.HTTPException):
        connection.close()  # reconnects on the next request
        status = -1
    return time.perf_counter() - started, status


def _connection(url: str) -> http.client.HTTPConnection:
    where = urlsplit(url)
    return http.client.HTTPConnection(where.hostname, where.port, timeout=REQUEST_TIMEOUT_S)


def time_alone(url: str, route: Route, runs: int) -> list[Answer]:
    """``route`` asked ``runs`` times one after another, nothing else asking (after one untimed request)."""
    connection = _connection(url)
    try:
        timed(connection, route)
        return [timed(connection, route) for _ in range(runs)]
    finally:
        connection.close()


def load(url: str, routes: Sequence[Route], threads: int, requests: int) -> tuple[dict[str, list[Answer]], float]:
    """``threads`` clients at once, each asking ``requests`` times, the routes in turn (client i starting at
    route i): every answer by route, and the wall seconds from the first request to the last answer."""
    answers: dict[str, list[Answer]] = {route.name: [] for route in routes}
    lock = threading.Lock()

    def client(i: int) -> None:
        connection = _connection(url)
        mine = [(routes[(i + j) % len(routes)], timed(connection, routes[(i + j) % len(routes)]))
                for j in range(requests)]
        connection.close()
        with lock:
            for route, answer in mine:
                answers[route.name].append(answer)

    workers = [threading.Thread(target=client, args=(i,), name=f"serve-load-{i}") for i in range(threads)]
    started = time.perf_counter()
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return answers, time.perf_counter() - started


# -- the rows ------------------------------------------------------------------------------------
def percentile(values: Sequence[float], p: float) -> float:
    """The nearest-rank ``p`` percentile (0 < p <= 100) of ``values``."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)]


def row(route: str, phase: str, answers: Sequence[Answer], in_flight: float = 0.0, detail: str = ""
        ) -> ServeLoadResult:
    seconds = [s for s, _ in answers] or [0.0]
    ms = lambda v: round(v * 1000, 2)  # noqa: E731
    return ServeLoadResult(route, phase, len(answers), ms(percentile(seconds, 50)), ms(percentile(seconds, 99)),
                           ms(max(seconds)), sum(status != 200 and status != 503 for _, status in answers),
                           sum(status == 503 for _, status in answers), round(in_flight, 2), _cores(), detail)


def alone_row(route: Route, answers: Sequence[Answer]) -> ServeLoadResult:
    return row(route.name, "alone", answers, detail=f"median of {len(answers)}: "
               f"{statistics.median(s for s, _ in answers) * 1000:.1f} ms")


def load_rows(answers: dict[str, list[Answer]], wall: float, writing: str) -> list[ServeLoadResult]:
    """One row a route; ``in_flight``: how many of its requests were outstanding on average (the seconds its
    clients waited over the load's wall seconds)."""
    return [row(name, "load", got, sum(s for s, _ in got) / wall if wall > 0 else 0.0,
                f"{len(got) / wall:.1f} answers/s {writing}" if wall > 0 else writing)
            for name, got in answers.items()]


def _cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
