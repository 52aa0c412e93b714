"""The next batch made ready while the model runs this one: a producer a bounded queue ahead of the model.

A thread takes the batches in order; each batch's items are prepared (decoded, sampled, resized) by ``prepare``,
in worker processes when a distributor is given (the indexing pipeline's decode workers,
``retrieval.pipeline.distribute``, or :class:`ProcessWorkers`), else in the thread itself; ``collate`` then builds
the batch's model inputs (the family's processor work) and any tensor in them is pinned in host memory when CUDA is
at hand, so the copy to the card (``non_blocking=True``) overlaps the model's work. At most ``depth`` batches wait
ready, so host memory stays bounded however long the run.

An item whose preparation fails costs that item (a :class:`Failed` in its place, with the reason), never its batch;
the consumer leaving early (an exception, KeyboardInterrupt, ``break``) stops the thread and any workers this feed
started.
"""

from __future__ import annotations

import functools
import multiprocessing as mp
import queue
import threading
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Any, Callable, Generic, Iterable, Iterator, Protocol, Sequence, TypeVar

from retrieval.core.errors import one_line

Item = TypeVar("Item")
DEPTH = 2  # batches waiting ready: one the model takes next, one behind it (decode of k+2 overlaps batch k+1)
_POLL_S = 0.1  # how often a blocked producer looks whether the consumer has left


class Distributor(Protocol):
    """What runs ``fn`` over items and yields (item, result-or-exception): ``retrieval.pipeline.distribute``'s."""

    def map(self, fn: Callable[[Any], Any], items: Iterable[Any]) -> Iterator[tuple[Any, Any]]: ...


@dataclass(frozen=True)
class Failed:
    """An item that could not be prepared, and why (one line)."""

    reason: str


@dataclass(frozen=True)
class Ready(Generic[Item]):
    """A batch as the model takes it: its items, each one's prepared value (or ``Failed``), and the collated
    inputs of the prepared ones (None without ``collate`` or when none was prepared)."""

    items: list[Item]
    values: list[Any]
    inputs: Any = None


class ProcessWorkers:
    """``workers`` processes (``concurrent.futures.ProcessPoolExecutor``), started at the first batch; results come
    back in submission order. A worker that dies costs the items in flight, and the next batch gets a new pool."""

    def __init__(self, workers: int = 1):
        self.workers = max(1, int(workers))
        self._pool: ProcessPoolExecutor | None = None

    def map(self, fn, items):
        if self._pool is None:
            # forkserver: workers start from a clean process, not a fork of one holding torch's threads
            method = "forkserver" if "forkserver" in mp.get_all_start_methods() else "spawn"
            self._pool = ProcessPoolExecutor(self.workers, mp_context=mp.get_context(method))
        submitted = [(item, self._pool.submit(fn, item)) for item in items]
        for item, future in submitted:
            try:
                yield item, future.result()
            except BrokenProcessPool as exc:
                self.close()
                yield item, exc
            except Exception as exc:  # the item's own failure, reported in its place
                yield item, exc

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None


def _numbered(prepare: Callable[[Any], Any], numbered: tuple[int, Any]) -> Any:
    return prepare(numbered[1])


class Feed:
    """Batches prepared ahead of the model: ``for ready in feed(batches)`` (see the module's text)."""

    def __init__(self, prepare: Callable[[Any], Any], collate: Callable[[list, list], Any] | None = None,
                 distributor: Distributor | None = None, depth: int = DEPTH):
        """``prepare``: item -> value, picklable when a distributor runs it; ``collate``: the prepared values of a
        batch's items and values (failed ones left out) -> its model inputs, run in the feed's thread (None where it
        raises); ``distributor``: who prepares (None: the thread)."""
        self.prepare, self.collate, self.distributor = prepare, collate, distributor
        self.depth = max(1, int(depth))

    def __call__(self, batches: Iterable[Sequence[Any]]) -> Iterator[Ready]:
        ready: queue.Queue = queue.Queue(maxsize=self.depth)
        stop = threading.Event()
        producer = threading.Thread(target=self._produce, args=(iter(batches), ready, stop), daemon=True,
                                    name="feed")
        producer.start()
        try:
            while (got := ready.get()) is not _END:
                if isinstance(got, _Raised):
                    raise got.error
                yield got
        finally:
            stop.set()
            _drain(ready)  # a producer blocked on a full queue sees ``stop`` at its next look
            producer.join()

    def _produce(self, batches: Iterator[Sequence[Any]], ready: queue.Queue, stop: threading.Event) -> None:
        try:
            for batch in batches:
                if stop.is_set() or not _put(ready, self._ready(list(batch)), stop):
                    return
        except BaseException as exc:  # handed to the consumer, which raises it where the model runs
            _put(ready, _Raised(exc), stop)
        finally:
            _put(ready, _END, stop)

    def _ready(self, items: list) -> Ready:
        values = self._prepared(items)
        kept = [(item, value) for item, value in zip(items, values, strict=True) if not isinstance(value, Failed)]
        return Ready(items, values, self._collated(kept) if self.collate is not None and kept else None)

    def _collated(self, kept: list[tuple[Any, Any]]) -> Any:
        try:
            return pinned(self.collate([item for item, _ in kept], [value for _, value in kept]))
        except Exception:  # the model makes its inputs itself, as without a feed, and says what is wrong there
            return None

    def _prepared(self, items: list) -> list:
        if self.distributor is None:
            return [guarded(self.prepare, item) for item in items]
        values: list = [None] * len(items)
        fn = functools.partial(_numbered, self.prepare)
        for (i, _), value in self.distributor.map(fn, list(enumerate(items))):
            values[i] = Failed(one_line(value, 200)) if isinstance(value, BaseException) else value
        return values


def guarded(prepare: Callable[[Any], Any], item: Any) -> Any:
    """``prepare(item)``, or ``Failed`` with the reason: a file gone or changed since it was indexed, say."""
    try:
        return prepare(item)
    except Exception as exc:  # this item's failure only
        return Failed(one_line(exc, 200))


def pinned(value: Any) -> Any:
    """``value`` with every torch tensor in it (in dicts, lists, tuples, mappings like a processor's output) copied
    to pinned host memory, so a ``non_blocking`` copy to the card is asynchronous; as it is without CUDA."""
    import torch

    if not torch.cuda.is_available():
        return value
    if isinstance(value, torch.Tensor):
        return value if value.device.type != "cpu" or value.is_pinned() else value.pin_memory()
    if isinstance(value, (list, tuple)):
        return type(value)(pinned(v) for v in value)
    if hasattr(value, "items") and hasattr(value, "__setitem__"):
        for key, inner in list(value.items()):
            value[key] = pinned(inner)
    return value


class _Raised:
    def __init__(self, error: BaseException):
        self.error = error


_END = object()


def _put(ready: queue.Queue, value: Any, stop: threading.Event) -> bool:
    """Put ``value`` once there is room; False (not put) once the consumer has left."""
    while not stop.is_set():
        try:
            ready.put(value, timeout=_POLL_S)
            return True
        except queue.Full:
            continue
    return False


def _drain(ready: queue.Queue) -> None:
    while True:
        try:
            ready.get_nowait()
        except queue.Empty:
            return
