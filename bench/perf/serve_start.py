"""`convis serve` as a client meets it, each run a fresh server: the seconds until /health answers, and, once
/health says no model is still warming, the seconds the first text search takes over HTTP.

Wall seconds are the client's; CPU seconds and peak RSS are the server's own (/proc) at the moment measured, so
the search row's RSS is the server's with its models built.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import urlencode

from bench.perf.cli_start import CLI, ROOT, Run, cli_row, command_env
from bench.perf.memory import _cpu_s, _rss_kb
from bench.perf.sections.cli import CliResult

START_TIMEOUT_S = 120.0
WARM_TIMEOUT_S = 900.0  # building every model of the index, on a busy machine
POLL_S = 0.02


def time_serve(index_dir: Path, runs: int, text: str, log: Path) -> list[CliResult]:
    """Two rows: until /health answers, and the first search for ``text`` once warm; the server's log goes to
    ``log`` (the last run's)."""
    listening, searching = [], []
    for _ in range(max(1, runs)):
        up, search = _one_server(index_dir, text, log)
        listening.append(up)
        searching.append(search)
    return [cli_row("convis serve: until /health answers", "serve-listening", listening),
            cli_row(f"convis serve: GET /search?text={text} once /health says warm", "serve-search", searching)]


def _one_server(index_dir: Path, text: str, log: Path) -> tuple[Run, Run]:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    started = time.perf_counter()
    with open(log, "w") as log_file:  # not a pipe: unread, a full one would stall the server's logging
        server = subprocess.Popen([sys.executable, str(CLI), "serve", "--index-dir", str(index_dir), "--port",
                                   str(port)], cwd=ROOT, env=command_env(), stdout=log_file, stderr=log_file)
    try:
        health = first_health(url, server, started, log)
        up = (time.perf_counter() - started, _cpu_s(server.pid), _rss_kb(server.pid, "VmHWM") / 1024)
        until_warm(url, health, server, log)
        return up, _timed_search(url, text, server.pid)
    finally:
        server.terminate()
        server.wait(30)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _get(url: str, timeout: float = 60.0) -> dict:
    with urllib.request.urlopen(url, timeout=timeout) as answer:
        return json.loads(answer.read())


def first_health(url: str, server: subprocess.Popen, started: float, log: Path) -> dict:
    while time.perf_counter() - started < START_TIMEOUT_S:
        try:
            return _get(url + "/health", timeout=5)
        except (urllib.error.URLError, ConnectionError):  # not listening yet
            still_running(server, log)
            time.sleep(POLL_S)
    raise RuntimeError(f"convis serve did not answer /health within {START_TIMEOUT_S:g} s")


def until_warm(url: str, health: dict, server: subprocess.Popen, log: Path) -> None:
    deadline = time.perf_counter() + WARM_TIMEOUT_S
    while health.get("warming"):  # a server that does not warm has nothing to wait for
        if time.perf_counter() > deadline:
            raise RuntimeError(f"convis serve still warming {health['warming']} after {WARM_TIMEOUT_S:g} s")
        still_running(server, log)
        time.sleep(0.1)
        health = _get(url + "/health")


def _timed_search(url: str, text: str, pid: int) -> Run:
    cpu, started = _cpu_s(pid), time.perf_counter()
    try:
        _get(f"{url}/search?{urlencode({'text': text})}")
    except urllib.error.HTTPError as exc:
        raise RuntimeError(f"convis serve: GET /search answered {exc.code}: {exc.read()[:300]!r}") from None
    return time.perf_counter() - started, _cpu_s(pid) - cpu, _rss_kb(pid, "VmHWM") / 1024


def still_running(server: subprocess.Popen, log: Path) -> None:
    if server.poll() is not None:
        said = (log.read_text(errors="replace").strip().splitlines() or [""])[-1]
        raise RuntimeError(f"convis serve exited {server.returncode}: {said}")
