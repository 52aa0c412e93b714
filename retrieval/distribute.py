"""Distributors run a function over work items and yield (item, result-or-error) as they finish.

The indexing pipeline only sees this interface, so decoding can move from a local
process pool to a cluster without touching the pipeline.  The local one isolates
each task in a worker process: a decoder that hangs (timeout) or dies in C code
(segfault) costs that one item, never the run.
"""

from __future__ import annotations

import multiprocessing as mp
import time
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Callable, Iterable, Iterator, Protocol, TypeVar

Item = TypeVar("Item")
CRASHED = float("-inf")  # start-time marker of a task whose worker died


class TaskFailed(Exception):
    """A task did not return: it timed out or its worker process died."""


class Distributor(Protocol):
    def map(self, fn: Callable[[Any], Any], items: Iterable[Item]) -> Iterator[tuple[Item, Any]]: ...


def _quiet_worker() -> None:
    """Native decoders write diagnostics straight to fd 2; in workers that is noise (reasons are returned)."""
    import os

    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 2)
    os.close(devnull)


class SerialDistributor:
    """In-process, in order: no isolation, no overhead (tests, debugging, one-off anchors)."""

    def map(self, fn, items):
        for item in items:
            try:
                yield item, fn(item)
            except Exception as exc:  # reported per item, like the pool does
                yield item, exc


class ProcessDistributor:
    """A pool of ``workers`` processes, one task per worker at a time, each with a time limit."""

    def __init__(self, workers: int = 1, timeout: float = 300.0):
        self.workers = max(1, workers)
        self.timeout = timeout
        # forkserver: workers start from a clean process, not a fork of one holding torch threads
        self.context = mp.get_context("forkserver" if "forkserver" in mp.get_all_start_methods() else "spawn")

    def map(self, fn, items):
        queue = list(items)
        queue.reverse()  # pop() from the end keeps the input order of submission
        suspects: list = []  # in flight at a crash with others: rerun one at a time to find the culprit
        pool = self._pool()
        running: dict[Future, tuple[Any, float]] = {}
        try:
            while queue or running or suspects:
                self._submit(pool, running, queue, suspects, fn)
                done, _ = wait(running, timeout=self._wait_time(running), return_when=FIRST_COMPLETED)
                yield from self._collect(done, running)
                if self._expired(running) or self._broken(done):
                    yield from self._fail_running(running, queue, suspects)
                    pool = self._restart(pool)
        finally:
            self._kill(pool)

    def _submit(self, pool, running, queue, suspects, fn) -> None:
        if suspects:
            if not running:
                item = suspects.pop()
                running[pool.submit(fn, item)] = (item, time.monotonic())
            return
        while queue and len(running) < self.workers:
            item = queue.pop()
            running[pool.submit(fn, item)] = (item, time.monotonic())

    def _collect(self, done, running):
        for future in done:
            item, _ = running.pop(future)
            try:
                yield item, future.result()
            except BrokenProcessPool:
                running[future] = (item, CRASHED)  # handled by _fail_running
            except Exception as exc:
                yield item, exc

    def _broken(self, done) -> bool:
        return any(isinstance(f.exception(), BrokenProcessPool) for f in done if not f.cancelled())

    def _expired(self, running) -> bool:
        now = time.monotonic()
        return any(now - started > self.timeout for _, started in running.values())

    def _fail_running(self, running, queue, suspects):
        """Blame the timed-out or crashed task; requeue the ones killed only because their pool went.

        A crash with one task in flight blames it; with several, each is rerun alone.
        """
        now = time.monotonic()
        crashed = any(started == CRASHED for _, started in running.values())
        for item, started in running.values():
            if crashed and len(running) == 1:
                yield item, TaskFailed("decoder crashed (its worker process died)")
            elif crashed:
                suspects.append(item)
            elif now - started > self.timeout:
                yield item, TaskFailed(f"timed out after {self.timeout:.0f} s")
            else:
                queue.append(item)
        running.clear()

    def _wait_time(self, running) -> float:
        oldest = min((started for _, started in running.values()), default=time.monotonic())
        return max(0.05, self.timeout - (time.monotonic() - oldest))

    def _pool(self) -> ProcessPoolExecutor:
        return ProcessPoolExecutor(max_workers=self.workers, mp_context=self.context, initializer=_quiet_worker)

    def _restart(self, pool: ProcessPoolExecutor) -> ProcessPoolExecutor:
        self._kill(pool)
        return self._pool()

    @staticmethod
    def _kill(pool: ProcessPoolExecutor) -> None:
        # shutdown() alone waits for a hung worker forever; kill the processes first
        for proc in list((getattr(pool, "_processes", None) or {}).values()):
            if proc.is_alive():
                proc.kill()
        pool.shutdown(wait=False, cancel_futures=True)
