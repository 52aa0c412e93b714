"""Distributors run a function over work items and yield (item, result-or-error) as they finish.

The indexing pipeline only sees this interface, so decoding can move from a local
process pool to a cluster without touching the pipeline.  The local one isolates
each task in a worker process: a decoder that hangs (timeout) or dies in C code
(segfault) costs that one item, never the run.
"""

from __future__ import annotations

import importlib
import multiprocessing as mp
import os
import time
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator, Protocol, TypeVar

from retrieval.pipeline.guard import check_main_guard

Item = TypeVar("Item")


class TaskFailed(Exception):
    """A task did not return: it timed out or its worker process died."""


class Distributor(Protocol):
    def map(self, fn: Callable[[Any], Any], items: Iterable[Item]) -> Iterator[tuple[Item, Any]]: ...


def _quiet_worker() -> None:
    """Native decoders write diagnostics straight to fd 2; in workers that is noise (reasons are returned)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 2)
    os.close(devnull)


def _import(modules: tuple[str, ...]) -> None:
    for name in modules:
        try:
            importlib.import_module(name)
        except ImportError:
            pass  # optional (decord is x86_64 Linux only); the task will say what is missing


class SerialDistributor:
    """In-process, in order: no isolation, no overhead (tests, debugging, one-off anchors)."""

    def map(self, fn, items):
        for item in items:
            try:
                yield item, fn(item)
            except Exception as exc:  # reported per item, like the pool does
                yield item, exc


@dataclass
class _Task:
    item: Any
    started: float | None  # None: queued behind busy workers (its time limit has not started)
    crashed: bool = False  # its future reported the pool broken


class ProcessDistributor:
    """A pool of ``workers`` processes, each task with a time limit, ``prefetch`` tasks queued ahead.

    The queued tasks are what makes decoding overlap the caller's work: while the caller
    handles one result (embeds a file), every worker already has its next task, so no worker
    waits for the caller to come back for more.
    """

    def __init__(self, workers: int = 1, timeout: float = 300.0, prefetch: int | None = None):
        self.workers = max(1, workers)
        self.timeout = timeout
        self.prefetch = self.workers if prefetch is None else max(0, prefetch)
        # forkserver: workers start from a clean process, not a fork of one holding torch threads
        self.context = mp.get_context("forkserver" if "forkserver" in mp.get_all_start_methods() else "spawn")
        self._started: ProcessPoolExecutor | None = None

    def start(self, preload: tuple[str, ...] = ()) -> None:
        """Start the workers now and import ``preload`` modules in them, so that start-up overlaps the
        caller's own (loading models) instead of delaying the first result.  ``map`` uses them."""
        if self._started is None:
            self._started = self._pool()
            for _ in range(self.workers):
                self._started.submit(_import, preload)

    def close(self) -> None:
        """Stop workers started by ``start`` that no ``map`` took over (the caller failed before)."""
        if self._started is not None:
            self._kill(self._started)
            self._started = None

    def map(self, fn, items):
        queue = list(items)
        queue.reverse()  # pop() from the end keeps the input order of submission
        suspects: list = []  # in flight at a crash with others: rerun one at a time to find the culprit
        pool, self._started = self._started or self._pool(), None
        running: dict[Future, _Task] = {}  # in submission order: the pool starts tasks in this order
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
                running[pool.submit(fn, item)] = _Task(item, time.monotonic())
            return
        while queue and len(running) < self.workers + self.prefetch:
            item = queue.pop()
            busy = sum(task.started is not None for task in running.values())
            running[pool.submit(fn, item)] = _Task(item, time.monotonic() if busy < self.workers else None)

    def _collect(self, done, running):
        # finished tasks first: each frees a worker for the next queued task before any crash is judged
        for future in sorted(done, key=lambda f: not f.cancelled() and isinstance(f.exception(), BrokenProcessPool)):
            task = running.pop(future)
            try:
                result = future.result()
            except BrokenProcessPool:
                task.crashed = True
                running[future] = task  # handled by _fail_running
                continue
            except Exception as exc:
                result = exc
            self._start_next(running)
            yield task.item, result

    @staticmethod
    def _start_next(running) -> None:
        """A worker came free: the oldest queued task is now running, and its time limit starts."""
        waiting = next((task for task in running.values() if task.started is None), None)
        if waiting is not None:
            waiting.started = time.monotonic()

    def _broken(self, done) -> bool:
        return any(isinstance(f.exception(), BrokenProcessPool) for f in done if not f.cancelled())

    def _expired(self, running) -> bool:
        now = time.monotonic()
        return any(task.started is not None and now - task.started > self.timeout for task in running.values())

    def _fail_running(self, running, queue, suspects):
        """Blame the timed-out or crashed task; requeue the ones killed only because their pool went.

        A crash with one task started blames it; with several, each is rerun alone.  Queued
        tasks never ran, so they go back to the queue either way.
        """
        now = time.monotonic()
        crashed = any(task.crashed for task in running.values())
        started = [task for task in running.values() if task.started is not None]
        for task in running.values():
            if task.started is None:
                queue.append(task.item)
            elif crashed and len(started) == 1:
                yield task.item, TaskFailed("decoder crashed (its worker process died)")
            elif crashed:
                suspects.append(task.item)
            elif now - task.started > self.timeout:
                yield task.item, TaskFailed(f"timed out after {self.timeout:.0f} s")
            else:
                queue.append(task.item)
        running.clear()

    def _wait_time(self, running) -> float:
        starts = [task.started for task in running.values() if task.started is not None]
        oldest = min(starts, default=time.monotonic())
        return max(0.05, self.timeout - (time.monotonic() - oldest))

    def _pool(self) -> ProcessPoolExecutor:
        check_main_guard()  # a script's unguarded code would start workers again in every worker
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
