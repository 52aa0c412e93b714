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
import select
import threading
import time
from concurrent.futures import ALL_COMPLETED, FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator, Protocol, TypeVar

from retrieval.core.errors import ConvisError
from retrieval.core.processes import pid_alive
from retrieval.pipeline.guard import check_main_guard

Item = TypeVar("Item")


MAX_FRUITLESS_RESTARTS = 3  # pool restarts in a row that settle no task before the rest is given up


class TaskFailed(ConvisError):
    """A task did not return: it timed out or its worker process died."""

    exit_code, http_status = 1, 500
    label = "internal error"


class Distributor(Protocol):
    def map(self, fn: Callable[[Any], Any], items: Iterable[Item]) -> Iterator[tuple[Item, Any]]: ...


def _quiet_worker() -> None:
    """Native decoders write diagnostics straight to fd 2; in workers that is noise (reasons are returned)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 2)
    os.close(devnull)


def _init_worker(owner: int) -> None:
    threading.Thread(target=_exit_with, args=(owner,), daemon=True, name="exit-with-owner").start()
    _quiet_worker()


def _exit_with(owner: int) -> None:
    """End this worker when ``owner``, the process that runs the pool, ends (a killed ``convis index``).

    Workers block on a task queue whose write end they hold themselves, and they are children of the
    forkserver, which in turn waits for them: without this, all of them outlive their owner.
    """
    try:
        handle = os.pidfd_open(owner)  # Linux: readable once the owner exits, no polling
    except (AttributeError, OSError):
        handle = None
    if handle is not None:
        select.select([handle], [], [])
    else:
        while pid_alive(owner):
            time.sleep(1.0)
    os._exit(1)


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
    alone: bool = False  # rerun as the only task: a crash now is its own


class ProcessDistributor:
    """A pool of ``workers`` processes, each task with a time limit, ``prefetch`` tasks queued ahead.

    The queued tasks are what makes decoding overlap the caller's work: while the caller
    handles one result (embeds a file), every worker already has its next task, so no worker
    waits for the caller to come back for more.
    """

    def __init__(self, workers: int = 1, timeout: float = 300.0, prefetch: int | None = None,
                 keep_warm: bool = False):
        self.workers = max(1, workers)
        # keep_warm: a map that ends with every task settled leaves its workers to the next map (until
        # ``close``): a run that maps twice (a long file's first window, then the rest) starts them once
        self.keep_warm = keep_warm
        self.timeout = timeout
        self.prefetch = self.workers if prefetch is None else max(0, prefetch)
        # forkserver: workers start from a clean process, not a fork of one holding torch threads
        self.context = mp.get_context("forkserver" if "forkserver" in mp.get_all_start_methods() else "spawn")
        self._started: ProcessPoolExecutor | None = None
        self.notes: list[str] = []  # what a run should tell its user about these workers (how many, why)

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
        suspects: list = []  # in flight at a crash: rerun one at a time to find the culprit
        pool, self._started = self._started or self._pool(), None
        running: dict[Future, _Task] = {}  # in submission order: the pool starts tasks in this order
        fruitless = 0  # pool restarts since the last result: bounds a crash loop
        settled_all = False
        try:
            while queue or running or suspects:
                broken = not self._submit(pool, running, queue, suspects, fn)
                # a broken pool settles every future at once: take them all, so no finished result is lost
                done, _ = wait(running, timeout=self._wait_time(running),
                               return_when=ALL_COMPLETED if broken else FIRST_COMPLETED)
                settled = list(self._collect(done, running))
                restart = broken or self._expired(running) or self._broken(done)
                if restart:
                    settled += self._fail_running(running, queue, suspects)
                    pool = self._restart(pool)
                fruitless = 0 if settled else fruitless + restart
                if fruitless > MAX_FRUITLESS_RESTARTS:
                    settled += self._give_up(queue, suspects)
                for handed, result in enumerate(settled):
                    # results not yet handed back hold their place in the window: when several settle at
                    # once, the next task still starts while the caller works on the last of them
                    self._submit(pool, running, queue, suspects, fn, pending=len(settled) - handed)
                    yield result
            settled_all = True
        finally:
            if settled_all and self.keep_warm:
                self._started = pool  # idle and whole: the next map takes it over
            else:
                self._kill(pool)

    def _submit(self, pool, running, queue, suspects, fn, pending: int = 0) -> bool:
        """Hand the pool what it may take now; False if the pool broke (a worker died while idle or busy).
        ``pending``: settled results the caller has not finished with, counted in the window."""
        try:
            if suspects:
                if not running:
                    future = pool.submit(fn, suspects[-1])  # popped only once submitted
                    running[future] = _Task(suspects.pop(), time.monotonic(), alone=True)
                return True
            while queue and len(running) + pending < self.workers + self.prefetch:
                busy = sum(task.started is not None for task in running.values())
                future = pool.submit(fn, queue[-1])  # popped only once submitted
                running[future] = _Task(queue.pop(), time.monotonic() if busy < self.workers else None)
        except BrokenProcessPool:
            return False  # the item stays queued: it never reached a worker
        return True

    @staticmethod
    def _give_up(queue, suspects) -> list:
        """Workers die before any task settles, again and again: fail what is left instead of spinning."""
        failed = [(item, TaskFailed("decoder processes keep dying (killed or out of memory)"))
                  for item in queue + suspects]
        queue.clear()
        suspects.clear()
        return failed

    def _collect(self, done, running):
        # finished tasks first: each frees a worker for the next queued task before any crash is judged
        # and in the order they were handed out: results that settle together come back as submitted
        in_order = [future for future in running if future in done]
        for future in sorted(in_order, key=lambda f: not f.cancelled() and isinstance(f.exception(),
                                                                                      BrokenProcessPool)):
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

    def _limit(self, item) -> float:
        """Seconds ``item`` may take: the timeout, times what the item says its task costs (``timeout_factor``:
        a task that decodes every frame of a file, not a window of it, gets more)."""
        return self.timeout * getattr(item, "timeout_factor", 1.0)

    def _expired(self, running) -> bool:
        now = time.monotonic()
        return any(task.started is not None and now - task.started > self._limit(task.item)
                   for task in running.values())

    def _fail_running(self, running, queue, suspects):
        """Blame the timed-out or crashed task; requeue the ones killed only because their pool went.

        A crash blames only a task that was running alone; the tasks in flight at any other crash
        are rerun one at a time, so a worker killed from outside costs no file.  Queued tasks
        never ran, so they go back to the queue either way.
        """
        now = time.monotonic()
        crashed = any(task.crashed for task in running.values())
        for task in running.values():
            if task.started is None:
                queue.append(task.item)
            elif crashed and task.alone:
                yield task.item, TaskFailed("decoder crashed: its worker process died (killed or out of memory)")
            elif crashed:
                suspects.append(task.item)
            elif now - task.started > self._limit(task.item):
                yield task.item, TaskFailed(f"timed out after {self._limit(task.item):.0f} s")
            else:
                queue.append(task.item)
        running.clear()

    def _wait_time(self, running) -> float:
        now = time.monotonic()
        left = [self._limit(task.item) - (now - task.started) for task in running.values() if task.started is not None]
        return max(0.05, min(left, default=self.timeout))

    def _pool(self) -> ProcessPoolExecutor:
        check_main_guard()  # a script's unguarded code would start workers again in every worker
        return ProcessPoolExecutor(max_workers=self.workers, mp_context=self.context, initializer=_init_worker,
                                   initargs=(os.getpid(),))

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
