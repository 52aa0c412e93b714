"""A decode worker that dies costs at most its own file; workers never outlive a killed `convis index`."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from retrieval.pipeline.distribute import ProcessDistributor, TaskFailed
from tests.paths import ROOT
from tests.workers import behave


def dies_once(item):
    """`(marker, _)`: the first run records its pid in marker and waits to be killed; a rerun returns "done"."""
    marker, _ = item
    if os.path.exists(marker):
        return "done"
    Path(marker).write_text(str(os.getpid()))
    time.sleep(600)


class Tracked(ProcessDistributor):
    """Keeps the pools it starts, so a test can wait until one has noticed its worker died."""

    def __init__(self, *args, **kwargs):
        self.pools = []
        super().__init__(*args, **kwargs)

    def _pool(self):
        self.pools.append(super()._pool())
        return self.pools[-1]


def poll(condition, limit=60.0):
    deadline = time.monotonic() + limit
    while not condition():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.02)


def test_a_worker_killed_between_tasks_costs_no_file():
    distributor = Tracked(workers=1, timeout=60, prefetch=0)
    items = [("pid", 0)] + [("ok", i) for i in range(3)]
    results = {}
    for item, result in distributor.map(pid_or_behave, items):
        results[item] = result
        if item == ("pid", 0):  # the only worker is idle now: kill it while this caller is busy
            os.kill(result, signal.SIGKILL)
            poll(lambda: distributor.pools[-1]._broken)
    assert [results[("ok", i)] for i in range(3)] == [0, 1, 2]
    assert len(distributor.pools) == 2  # rebuilt once


def pid_or_behave(item):
    """`("pid", _)` returns the worker's pid; anything else is `behave`."""
    return os.getpid() if item[0] == "pid" else behave(item)


def test_a_busy_worker_killed_from_outside_costs_no_file(tmp_path):
    marker = str(tmp_path / "pid")
    items = [("ok", 1), (marker, 0), ("ok", 2), ("ok", 3)]
    results = {}
    for item, result in ProcessDistributor(workers=1, timeout=60).map(dies_once_or_behave, items):
        results[item] = result
        if item == ("ok", 1):
            poll(lambda: os.path.exists(marker) and Path(marker).read_text())
            os.kill(int(Path(marker).read_text()), signal.SIGKILL)
    assert results == {("ok", 1): 1, (marker, 0): "done", ("ok", 2): 2, ("ok", 3): 3}


def dies_once_or_behave(item):
    return behave(item) if item[0] == "ok" else dies_once(item)


def test_a_task_that_kills_its_worker_every_time_is_blamed_alone():
    items = [("ok", 1), ("crash", 0), ("ok", 2)]
    results = dict(ProcessDistributor(workers=2, timeout=60).map(behave, items))
    assert results[("ok", 1)] == 1 and results[("ok", 2)] == 2
    assert isinstance(results[("crash", 0)], TaskFailed) and "worker process died" in str(results[("crash", 0)])


def test_workers_that_die_before_any_task_settles_end_the_run_with_reasons():
    class Doomed(ProcessDistributor):
        def _pool(self):
            pool = super()._pool()
            pool.shutdown()  # every submit now fails as if its workers had died
            pool._broken = "workers died"
            return pool

    results = dict(Doomed(workers=1, timeout=60).map(behave, [("ok", 1), ("ok", 2)]))
    assert all("keep dying" in str(r) for r in results.values()) and len(results) == 2


def _descendants(pid: int) -> set[int]:
    parents = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            parents[int(entry)] = int(stat.rsplit(")", 1)[1].split()[1])
    found, frontier = set(), {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_killed_index_run_leaves_no_worker_behind(tmp_path, video_folder, tiny_models):
    cmd = [sys.executable, str(ROOT / "cli.py"), "index", str(video_folder), "--index-dir", str(tmp_path / "index"),
           "-i", f"dinov2:{tiny_models['dinov2']}", "--workers", "2", "--publish-every", "0", "--json"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env=os.environ | {"HF_HUB_OFFLINE": "1"})
    try:
        poll(lambda: len(_descendants(proc.pid)) >= 3 or proc.poll() is not None)  # forkserver and 2 workers
        helpers = _descendants(proc.pid)
    finally:
        proc.kill()
        proc.wait()
    assert len(helpers) >= 3, "the run ended before its workers were seen"
    poll(lambda: not any(_alive(pid) for pid in helpers), limit=30)
