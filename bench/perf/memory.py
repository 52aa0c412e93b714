"""Peak resident memory and CPU time of this process and its children, read from /proc (Linux)."""

from __future__ import annotations

import os
import resource
import threading


def _rss_kb(pid: int, field: str = "VmRSS") -> int:
    """A process's resident memory now (``VmHWM``: its peak so far), in KiB."""
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith(f"{field}:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass  # the process ended between listing and reading
    return 0


def _children(pid: int) -> list[int]:
    found = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as fh:
                found.extend(int(c) for c in fh.read().split())
    except OSError:
        pass
    return found


def _tree(pid: int) -> list[int]:
    todo, found = [pid], []
    while todo:
        current = todo.pop()
        found.append(current)
        todo.extend(_children(current))
    return found


def _cpu_s(pid: int) -> float:
    """User + system CPU seconds a process has used so far (0 once it is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return 0.0


class PeakRss:
    """Samples the process tree in a thread: ``mb`` is the highest total RSS seen, ``cpu_s`` the CPU
    time the tree used meanwhile (workers included, counted up to their last sample), ``child_mb`` the
    highest peak RSS (VmHWM) of any one process under this one (a decode worker).

    Sampling (every 10 ms) can miss a spike shorter than that; ``ru_maxrss`` of this process
    is taken as a floor, which is exact when the measurement has a process of its own.
    """

    def __init__(self, interval: float = 0.01, own_process: bool = False):
        self.interval, self.own_process, self.mb, self.cpu_s = interval, own_process, 0.0, 0.0
        self.child_mb = 0.0
        self._cpu: dict[int, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def __enter__(self) -> "PeakRss":
        self._start_cpu = {p: _cpu_s(p) for p in _tree(os.getpid())}
        self._once()
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self._once()
        self.cpu_s = sum(used - self._start_cpu.get(pid, 0.0) for pid, used in self._cpu.items())
        if self.own_process:  # Linux reports kilobytes
            self.mb = max(self.mb, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)

    def _once(self) -> None:
        pids = _tree(os.getpid())
        self.mb = max(self.mb, sum(_rss_kb(p) for p in pids) / 1024)
        self.child_mb = max([self.child_mb, *(_rss_kb(p, "VmHWM") / 1024 for p in pids[1:])])
        for pid in pids:
            self._cpu[pid] = max(self._cpu.get(pid, 0.0), _cpu_s(pid))

    def _sample(self) -> None:
        while not self._stop.wait(self.interval):
            self._once()
