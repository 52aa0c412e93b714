"""Index runs the web app starts (``convis serve --allow-writes``): each in a child process.

DuckDB lets no other process open a catalog its writer holds, and inside one process a read-only connection
cannot open a file a read-write one holds; so a run in the server's own process would lock the server's readers
out.  In a child process it is a writer like a ``convis index`` run from a terminal: it marks its pid, and the
server's requests read the snapshot it publishes meanwhile.

The child (``python -m retrieval.serve.index_job --index-dir D --root R [--retry-failed]``) prints one JSON
object a line on stdout for each progress event (``{"event": "file", "path": ..., "frames": ..., "ok": ...}``),
and last ``{"event": "done", "report": {...}}``, or ``{"event": "error", "error": "one line"}`` and exit code 1.
``IndexJob`` starts it and follows those lines from a thread; ``IndexJobs`` lets one run at a time.

The server reads the child's stdout; nothing else passes between them.  Either may end first:

- The server stopping (Ctrl+C, SIGTERM) stops the child: it is interrupted, closes its catalog and its decode
  workers; what it committed stays indexed and the next run resumes from there.
- The server killed (its pipe's reader gone) does not stop the child: it goes on to its end without printing.
  Whatever happens to its stdout, the child keeps the job's record in the index folder (``app-run.json``: its
  state, counts, notes and report, written as they change), so a server started later answers ``GET /index/job``
  with that run, running or finished.
- The child killed: the server's thread reads the end of its stdout and the job fails with the signal that
  stopped it; a server started later finds the record of a run whose process is gone and says so.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

from retrieval.core.processes import pid_alive

RUNNER = "retrieval.serve.index_job"
RECORD_NAME = "app-run.json"  # in the index folder: the last run the app started, as its child last recorded it
RECORD_LIMIT = 64 << 20  # a report lists every failed file: a large folder's is a few megabytes
MAX_NOTES = 50  # a run's notes are few; a flood of them must not grow the server's memory
STOP_WAIT_S = 10.0  # a stopped run closes its catalog and decode workers; then it is killed


# -- the server's side ----------------------------------------------------------------------------
@dataclass
class IndexJob:
    """One run the app started, as its events tell it: ``kind`` "add" (``files``: the refs it added) or
    "reindex"; ``state`` running, done or failed.  ``process`` is the child for the server that started it; a
    job read from its record (by a server started later) has none, only the child's ``pid``."""

    kind: str
    files: list[str]
    process: subprocess.Popen | None = field(default=None, repr=False)
    id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    state: str = "running"
    total: int | None = None  # files the run has to decode, once it knows
    done: int = 0
    current: str | None = None  # the file it reported last
    notes: list[str] = field(default_factory=list)
    report: dict | None = None
    error: str | None = None
    pid: int | None = None  # the child's
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @classmethod
    def start(cls, kind: str, files: Sequence[str], index_dir: Path, root: Path, retry_failed: bool = False,
              include: Sequence[str] = ()) -> "IndexJob":
        """Start the child indexing ``root`` into ``index_dir`` (``include``: removed paths to index again)."""
        job = cls(kind, list(files))
        command = [sys.executable, "-m", RUNNER, *job.arguments(index_dir, root, retry_failed, include)]
        job.process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, env=_child_env(),
                                       text=True, encoding="utf-8", errors="replace")
        job.pid = job.process.pid
        threading.Thread(target=job._follow, name=f"index-job-{job.id}", daemon=True).start()
        return job

    def arguments(self, index_dir: Path, root: Path, retry_failed: bool, include: Sequence[str]) -> list[str]:
        """The child's command line for this job; paths given as ``--file=PATH``: one in a folder named "-x"
        would read as an option."""
        return [f"--index-dir={index_dir}", f"--root={root}", f"--job-id={self.id}", f"--kind={self.kind}",
                *(f"--file={ref}" for ref in self.files), *(["--retry-failed"] if retry_failed else []),
                *(f"--include={rel}" for rel in include)]

    @classmethod
    def recorded(cls, index_dir: Path) -> "IndexJob | None":
        """The last run the app started on ``index_dir``, as its child last recorded it (None when there is no
        readable record); a run recorded as running whose child is gone has failed."""
        from retrieval.core.user_files import UserFileError, read_json

        path = Path(index_dir) / RECORD_NAME
        if not path.is_file():
            return None
        try:
            job = cls.from_record(read_json(path, "the app's run record", RECORD_LIMIT))
        except (UserFileError, KeyError, TypeError, ValueError):
            return None  # damaged, or not this module's: no run to show
        if job.state == "running" and not _alive(job.pid):
            job.state, job.error = "failed", job.error or GONE
        return job

    @classmethod
    def from_record(cls, data: dict) -> "IndexJob":
        job = cls(str(data["kind"]), [str(f) for f in data["files"]], id=str(data["id"]), state=str(data["state"]))
        job.total, job.done, job.current = data.get("total"), int(data.get("done") or 0), data.get("current")
        job.notes = [str(n) for n in data.get("notes") or []][:MAX_NOTES]
        job.report, job.error, job.pid = data.get("report"), data.get("error"), data.get("pid")
        return job

    def record(self) -> dict:
        """What the child keeps in ``RECORD_NAME``."""
        with self.lock:
            return {"id": self.id, "kind": self.kind, "files": list(self.files), "state": self.state,
                    "total": self.total, "done": self.done, "current": self.current, "notes": list(self.notes),
                    "report": self.report, "error": self.error, "pid": self.pid}

    @property
    def running(self) -> bool:
        return self.state == "running"

    def as_dict(self, public: Callable[[str], str] = str) -> dict:
        """What ``GET /index/job`` answers; ``public`` rewrites messages for the client."""
        with self.lock:
            return {"id": self.id, "kind": self.kind, "state": self.state, "total": self.total, "done": self.done,
                    "current": self.current, "files": list(self.files), "report": _public_report(self.report, public),
                    "error": public(self.error) if self.error else None, "notes": [public(n) for n in self.notes]}

    def stop(self) -> None:
        """Stop the child if it still runs: what it committed stays, and a later run resumes from there."""
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(STOP_WAIT_S)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def _follow(self) -> None:
        for line in self.process.stdout:
            try:
                event = json.loads(line)
            except ValueError:
                continue  # not an event (the child sends other output to stderr; this is a safety net)
            if isinstance(event, dict):
                self.apply(event)
        code = self.process.wait()
        # the state changes only once the child is gone: its catalog is closed and its snapshot published
        with self.lock:
            if code == 0 and self.report is not None:
                self.state = "done"
            else:
                self.state = "failed"
                self.error = self.error or _stopped(code)

    def apply(self, event: dict) -> None:
        kind = event.get("event")
        with self.lock:
            if kind == "start":
                self.total = event.get("total")
            elif kind == "file":
                self.done += 1
                self.current = event.get("path")
            elif kind == "note" and len(self.notes) < MAX_NOTES:
                self.notes.append(str(event.get("text", "")))
            elif kind == "done":
                self.report = event.get("report")
            elif kind == "error":
                self.error = str(event.get("error") or "the index run failed")


def _public_report(report: dict | None, public: Callable[[str], str]) -> dict | None:
    """The run's report with its messages rewritten for the client (they may name the server's folders)."""
    if report is None:
        return None
    failed = [{**f, "error": public(str(f.get("error") or ""))} for f in report.get("failed", [])]
    return {**report, "failed": failed, "notes": [public(str(n)) for n in report.get("notes", [])]}


def _stopped(code: int) -> str:
    if code < 0:
        return f"the index run was stopped (signal {-code}); what it committed stays indexed: re-index to resume"
    return f"the index run ended without a report (exit code {code}); the server's log may say why"


GONE = ("the index run ended without a report (its process was killed, or the machine restarted); what it "
        "committed stays indexed: re-index to resume")


def _alive(pid: object) -> bool:
    """``pid`` is an index run's child still at work, not a process that took its number since."""
    if not isinstance(pid, int) or not pid_alive(pid):
        return False
    try:  # another user's process (its number reused) runs something else: not this index's run
        return RUNNER.encode() in Path(f"/proc/{pid}/cmdline").read_bytes()  # empty for a zombie
    except OSError:
        return True  # no /proc (macOS): the live pid is all there is to go by


def _child_env() -> dict:
    """This environment, with the folder holding this package importable however the server was started."""
    env = dict(os.environ)
    top = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (top, env.get("PYTHONPATH")) if p)
    return env


class IndexJobs:
    """The app's index runs on ``index_dir``: one at a time; the last one stays for ``GET /index/job``."""

    def __init__(self, index_dir: Path | None = None):
        self.index_dir = index_dir
        self.started: IndexJob | None = None  # by this server
        # held while a write is checked and started, so two requests cannot both pass the checks
        self.starting = threading.Lock()

    @property
    def last(self) -> IndexJob | None:
        """The run this server started last; before it starts one, the last run the app started on this index (a
        server killed meanwhile): read again each time, as that run may still be going."""
        if self.started is not None or self.index_dir is None:
            return self.started
        return IndexJob.recorded(self.index_dir)

    def running(self) -> IndexJob | None:
        job = self.last
        return job if job is not None and job.running else None

    def start(self, *args, **kwargs) -> IndexJob:
        self.started = IndexJob.start(*args, **kwargs)
        return self.started

    def close(self) -> None:
        """Stop a run this server started that is still going (the server is stopping)."""
        if self.started is not None:
            self.started.stop()


# -- the child's side -----------------------------------------------------------------------------
LEFT = "the server that started this run stopped following it; the run went on to its end"
STOPPED = "the index run was stopped; what it committed stays indexed: re-index to resume"


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    job = IndexJob(args.kind, list(args.file), id=args.job_id or uuid.uuid4().hex[:12], pid=os.getpid())
    events = Events(job, args.index_dir / RECORD_NAME)
    signal.signal(signal.SIGTERM, _interrupt)  # stopped by the server: close the catalog and the workers first
    try:
        report = _run(args, events)
    except BaseException as exc:  # the server reads this line, whatever failed; the exit code says so too
        from retrieval.core.errors import one_line

        said = STOPPED if isinstance(exc, KeyboardInterrupt) else one_line(exc, 300)
        events.finish({"event": "error", "error": said}, "failed")
        return 1
    events.finish({"event": "done", "report": report.as_dict()}, "done")
    return 0


def _run(args: argparse.Namespace, emit: Callable[[dict], None]):
    from retrieval.engine import Engine
    from retrieval.pipeline.settings import IndexSettings

    engine = Engine(args.index_dir)
    if args.include:
        _include(engine, args.include)
    settings = IndexSettings(workers=args.workers, retry_failed=args.retry_failed)
    return engine.index(args.root, settings=settings, progress=lambda event, data: emit({"event": event, **data}))


def _include(engine, paths: Sequence[str]) -> None:
    """Clips added again under a path removed earlier are indexed again: adding them says so."""
    with engine.open_catalog() as catalog:
        excluded = set(catalog.excluded())
    again = [p for p in paths if p in excluded]
    if again:
        engine.unremove(again)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=f"python -m {RUNNER}", description="Index a folder for the web app, "
                                     "printing one JSON progress event a line.")
    parser.add_argument("--index-dir", type=Path, required=True)
    parser.add_argument("--root", type=Path, required=True)
    parser.add_argument("--retry-failed", action="store_true")
    parser.add_argument("--include", action="append", default=[], metavar="PATH",
                        help="A removed path (relative to the root) to index again.")
    parser.add_argument("--workers", type=int, default=1, help="Decode processes (one leaves the server's "
                        "machine responsive).")
    parser.add_argument("--job-id", default=None, help="The job's id in the server (its record keeps it).")
    parser.add_argument("--kind", default="reindex", choices=("add", "reindex"), help="What the job does.")
    parser.add_argument("--file", action="append", default=[], metavar="REF", help="A file the job adds.")
    return parser


class Events:
    """The child's events: a line each on stdout while the server follows them, and the job's record kept in the
    index folder whether or not it does.  Anything else written to stdout (a library's print, C code) goes to
    stderr."""

    def __init__(self, job: IndexJob, record: Path):
        self.job, self.record = job, record
        self.stream = os.fdopen(os.dup(1), "w", encoding="utf-8", buffering=1)
        os.dup2(2, 1)
        sys.stdout = sys.stderr
        self.followed = True
        self.save()

    def __call__(self, event: dict) -> None:
        self.job.apply(event)
        if event.get("event") in ("start", "file", "note"):
            self.save()
        self.send(event)

    def finish(self, event: dict, state: str) -> None:
        """The run's last event: its outcome recorded, then said to the server."""
        self.job.apply(event)
        with self.job.lock:
            self.job.state = state
        self.save()
        self.send(event)

    def send(self, event: dict) -> None:
        if not self.followed:
            return
        try:
            self.stream.write(json.dumps(event, default=str, ensure_ascii=False) + "\n")
            self.stream.flush()
        except OSError:  # the server is gone (killed): the run goes on, its record says how it ends
            self._unfollowed()

    def save(self) -> None:
        """The job's record, replaced whole (a reader never sees half of one)."""
        part = self.record.with_name(f".{RECORD_NAME}.{os.getpid()}.part")
        try:
            part.write_text(json.dumps(self.job.record(), default=str, ensure_ascii=False), encoding="utf-8")
            os.replace(part, self.record)
        except OSError:  # the record only informs a later server: a full disk costs it, never the run
            with contextlib.suppress(OSError):
                part.unlink(missing_ok=True)

    def _unfollowed(self) -> None:
        self.followed = False
        # what the stream still buffers drains into /dev/null: closing it at exit cannot fail again
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, self.stream.fileno())
        os.close(devnull)
        self.job.apply({"event": "note", "text": LEFT})
        self.save()


def _interrupt(_signum, _frame) -> None:
    raise KeyboardInterrupt


if __name__ == "__main__":
    sys.exit(main())
