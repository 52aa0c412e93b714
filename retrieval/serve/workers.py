"""Where the server's heavy work runs: a bounded pool of threads, with a bounded queue in front of it.

Decoding, model calls and the engine's verbs each hold a core for tens of milliseconds to seconds.  Run in the
web framework's own thread pool (40 threads on any machine) they all ran at once: on two cores every answer,
/health's included, waited for all the others.  Here at most ``workers`` of them run at a time (one a core by
default, at least two), up to ``queue`` more wait their turn in order, and a request beyond that is answered at
once with a 503 and a Retry-After header instead of waiting without bound.  The event loop never runs any of it,
so what needs no heavy work (/health, the UI's files) is answered while the pool is busy.
"""

from __future__ import annotations

import asyncio
import functools
import math
import os
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Callable, TypeVar

from retrieval.api import ConvisError

T = TypeVar("T")
QUEUE_PER_WORKER = 32  # requests waiting for each worker before the server answers 503
MAX_RETRY_AFTER_S = 60
SERVICE_WEIGHT = 0.2  # how much each finished request moves the running mean of their seconds


class ServerBusy(ConvisError):
    """The pool is running and queueing as many requests as it takes: ask again later."""

    exit_code, http_status = 1, 503

    def __init__(self, message: str, retry_after: int = 1):
        super().__init__(f"{message}; retry in {retry_after} s")
        self.retry_after = retry_after


def default_workers() -> int:
    """One worker a core this process may run on (the work is CPU-bound: more would only take turns), and at least
    two, so that one long request (a reranker's, a model's first build) never holds up every other."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(2, cores or 1)


class Workers:
    def __init__(self, workers: int | None = None, queue: int | None = None):
        self.size = workers or default_workers()
        self.queue = QUEUE_PER_WORKER * self.size if queue is None else queue
        self._lock = threading.Lock()
        self._admitted = 0  # running and waiting
        self._mean_s = 0.0  # running mean of a request's seconds in a worker: what Retry-After is made from
        self._executor: ThreadPoolExecutor | None = None

    @property
    def admitted(self) -> int:
        with self._lock:
            return self._admitted

    async def run(self, fn: Callable[..., T], *args, **kwargs) -> T:
        """``fn(*args, **kwargs)`` in a worker, its result or its exception; ServerBusy (503) at once when the
        workers and the queue are full."""
        future = self.submit(functools.partial(fn, *args, **kwargs))
        return await asyncio.wrap_future(future)

    def submit(self, call: Callable[[], T]) -> Future:
        with self._lock:
            if self._admitted >= self.size + self.queue:
                raise ServerBusy(f"the server is at capacity ({self.size} request(s) running, {self.queue} "
                                 "waiting)", self._retry_after())
            self._admitted += 1
            if self._executor is None:
                self._executor = ThreadPoolExecutor(self.size, thread_name_prefix="convis-worker")
            executor = self._executor
        try:
            future = executor.submit(self._timed, call)
        except RuntimeError:  # shut down meanwhile (the server stopping)
            self._finished(None)
            raise ServerBusy("the server is stopping") from None
        future.add_done_callback(self._finished)  # a slot is free once the work ends, not when its client leaves
        return future

    def _timed(self, call: Callable[[], T]) -> T:
        started = time.perf_counter()
        try:
            return call()
        finally:
            seconds = time.perf_counter() - started
            with self._lock:
                self._mean_s = seconds if not self._mean_s else self._mean_s + SERVICE_WEIGHT * (seconds - self._mean_s)

    def _finished(self, _future) -> None:
        with self._lock:
            self._admitted -= 1

    def _retry_after(self) -> int:
        """Seconds until the queue has room again, about: the waiting requests' share of the workers."""
        return min(MAX_RETRY_AFTER_S, max(1, math.ceil(self._admitted * self._mean_s / self.size)))

    def close(self) -> None:
        """Stop taking work; what runs finishes in its thread, what waits is dropped (the server is stopping).  The
        next request starts a new pool (an app's lifespan may start again)."""
        with self._lock:
            executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=False, cancel_futures=True)
