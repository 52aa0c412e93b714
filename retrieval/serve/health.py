"""What the server keeps of the index between requests: the summary /health shows, and the file listing.

Reading either opens the catalog and asks it a dozen questions: under load that waited for every other request,
so a health probe took as long as a query, and every query read the listing again for its hits' durations.  Both
are kept with the identity of the files readers read (``index_identity``: a few ``stat`` calls), which changes
whenever what a reader would read does.  While an index run writes, readers read its published snapshot, so only
a new snapshot (or the run ending) is a change: the run's own commits are not.

- The summary: a thread of its own reads it once, then looks every ``POLL_S`` seconds and reads it again only when
  the identity changed, or when the last read failed; /health answers from the last reading, with its age, and
  never waits for the engine.
- The listing: read by the request that finds the identity changed since the last read (the requests asking
  meanwhile wait for that read), then answered from memory by every request after it while the identity stays:
  never stale, read once per state of the index.
"""

from __future__ import annotations

import atexit
import threading
import time
import weakref
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, TypeVar

from retrieval.api import CATALOG_NAME, SNAPSHOT_NAME, writer_pid

POLL_S = 0.5
EXIT_WAIT_S = 10.0  # how long the interpreter's exit waits for a watching thread to leave the catalog
T = TypeVar("T")
_WATCHING: weakref.WeakSet = weakref.WeakSet()  # keepers whose thread may be running
# changes this process made to each index (by resolved folder): a file's timestamps tick only every few
# milliseconds, so a change made just after a read can leave every ``stat`` as it was
_CHANGES: dict[str, int] = {}
_CHANGES_LOCK = threading.Lock()


@dataclass(frozen=True)
class Reading:
    """One read of the index: its summary and what was said reading it, or why it could not be read."""

    summary: dict | None
    notices: tuple[str, ...]
    error: BaseException | None


class KeptIndex:
    def __init__(self, index_dir: Path, read: Callable[[list[str]], dict], poll_s: float = POLL_S,
                 then: Callable[[], object] | None = None):
        """``read(notices)``: the summary /health shows (it may raise: the reading then keeps the error);
        ``then()``: what else to make ready once the watching thread found the index changed and read it (the
        listing's answers: the requests after the change then find them made)."""
        self.index_dir, self.poll_s = Path(index_dir), poll_s
        self._read, self._then = read, then
        self._lock = threading.Lock()  # guards the fields below, never held while reading
        self._reading: Reading | None = None
        self._seen: tuple | None = None  # the index files' identity when the reading was made
        self._confirmed = 0.0  # time.monotonic() the reading was last known to match the files
        self._wake = threading.Event()  # set to end the wait between looks (closing)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def latest(self) -> tuple[Reading | None, float]:
        """The last reading (None before the first) and its age: seconds since it was last known current."""
        with self._lock:
            return self._reading, time.monotonic() - self._confirmed

    def refresh(self) -> Reading:
        """Read the index now (at start-up, and by the watching thread)."""
        seen = index_identity(self.index_dir)  # before reading: a change made meanwhile is seen by the next look
        notices: list[str] = []
        try:
            reading = Reading(self._read(notices), tuple(notices), None)
        except Exception as exc:  # the summary /health then answers with: a busy or damaged catalog, no index
            reading = Reading(None, tuple(notices), exc)
        with self._lock:
            self._reading, self._seen, self._confirmed = reading, seen, time.monotonic()
        return reading

    def look(self) -> None:
        """Read again if the files changed since the last reading, or it failed; else note it is still current."""
        with self._lock:
            reading, seen = self._reading, self._seen
        if reading is None or reading.error is not None or index_identity(self.index_dir) != seen:
            if self.refresh().error is None and self._then is not None:
                try:
                    self._then()
                except Exception:  # a request that needs it reads it, and says why it cannot
                    pass
            return
        with self._lock:
            self._confirmed = time.monotonic()

    def start(self) -> None:
        """Watch the index in a daemon thread (once; again after ``close``)."""
        with self._lock:
            if self._thread is not None and self._thread.is_alive():
                return
            self._stop = threading.Event()
            # the thread holds the keeper weakly: an app dropped without closing it (a test) ends its thread
            self._thread = threading.Thread(target=_watch, args=(weakref.ref(self), self._stop, self._wake),
                                            name="convis-health", daemon=True)
            self._thread.start()
            _WATCHING.add(self)

    def close(self, wait_s: float = 0.0) -> None:
        """Stop watching; ``wait_s``: how long to wait for a read in progress to end."""
        self._stop.set()
        self._wake.set()
        thread = self._thread
        if wait_s and thread is not None and thread is not threading.current_thread():
            thread.join(wait_s)


@dataclass
class Listing:
    identity: tuple  # the index files' when it was read
    files: list
    notices: list[str]  # what reading it said
    answers: dict = field(default_factory=dict)  # answers made from it alone, by name (kept as long as it is)


class KeptListing:
    """The index's file listing (``read(notices)``), read once for each state of the index files, and answers made
    from it alone (the body of /videos), made once for each."""

    def __init__(self, index_dir: Path, read: Callable[[list[str]], list]):
        self.index_dir = Path(index_dir)
        self._read = read
        self._lock = threading.Lock()
        self._kept: Listing | None = None
        self._reads: dict[tuple, Future] = {}  # reads under way, by identity: a request asking meanwhile waits

    def get(self, notices: list[str]) -> list:
        listing = self._current()
        notices.extend(n for n in listing.notices if n not in notices)
        return listing.files

    def answer(self, name: str, make: Callable[[list, list[str]], T]) -> T:
        """``make(files, notices)`` for the listing as it is now, made once per listing."""
        listing = self._current()
        with self._lock:
            made = listing.answers.get(name)
        if made is None:
            made = make(listing.files, list(listing.notices))
            with self._lock:
                listing.answers[name] = made
        return made

    def ready(self, name: str) -> T | None:
        """The answer ``name`` when it is made for the index as it is now, else None; reads nothing."""
        with self._lock:
            listing = self._kept
        if listing is None or listing.identity != index_identity(self.index_dir):
            return None
        with self._lock:
            return listing.answers.get(name)

    def _current(self) -> Listing:
        """The listing for the index as it is now: kept, or read once however many requests ask at once."""
        seen = index_identity(self.index_dir)  # before reading: a change made meanwhile is read next time
        with self._lock:
            if self._kept is not None and self._kept.identity == seen:
                return self._kept
            reading = self._reads.get(seen)
            mine = reading is None
            if mine:
                reading = self._reads[seen] = Future()
        if not mine:
            return reading.result()
        try:
            said: list[str] = []
            listing = Listing(seen, self._read(said), said)
        except BaseException as exc:
            reading.set_exception(exc)
            raise
        finally:
            with self._lock:
                self._reads.pop(seen, None)
        with self._lock:
            self._kept = listing
        reading.set_result(listing)
        return listing


def index_identity(index_dir: Path) -> tuple:
    """What readers of the index would read, as file identities: the published snapshot while a writer is at work
    (its commits change nothing readers see), else the catalog, its log and the snapshot; and the count of this
    process's own changes to it (``note_change``)."""
    catalog = index_dir / CATALOG_NAME
    writer = writer_pid(catalog)
    snapshot = _stat(index_dir / SNAPSHOT_NAME)
    changes = _CHANGES.get(_key(index_dir), 0)
    if writer is not None and snapshot is not None:
        return changes, writer, snapshot
    return changes, writer, snapshot, _stat(catalog), _stat(catalog.with_name(CATALOG_NAME + ".wal"))


def note_change(index_dir: Path) -> None:
    """This process changed the index: what was read of it before is stale, whatever its files' stats say."""
    with _CHANGES_LOCK:
        key = _key(index_dir)
        _CHANGES[key] = _CHANGES.get(key, 0) + 1


def _key(index_dir: Path) -> str:
    return str(Path(index_dir).resolve())


@atexit.register
def _stop_watching() -> None:
    """A daemon thread still inside DuckDB when the interpreter exits aborts the process ("terminate called"):
    an app never shut down (used without its lifespan) has its watcher stopped here, its read let end."""
    for keeper in list(_WATCHING):
        keeper.close(EXIT_WAIT_S)


def _watch(keeper_ref: weakref.ref, stop: threading.Event, wake: threading.Event) -> None:
    while not stop.is_set():
        keeper = keeper_ref()
        if keeper is None:
            return
        poll_s = keeper.poll_s
        keeper.look()
        del keeper
        wake.wait(poll_s)
        wake.clear()


def _stat(path: Path) -> tuple | None:
    try:
        found = path.stat()
    except OSError:
        return None
    return found.st_ino, found.st_size, found.st_mtime_ns
