"""Index runs the web app starts (``convis serve --allow-writes``): each in a child process.

DuckDB lets no other process open a catalog its writer holds, and inside one process a read-only connection
cannot open a file a read-write one holds; so a run in the server's own process would lock the server's readers
out.  In a child process it is a writer like a ``convis index`` run from a terminal: it marks its pid, and the
server's requests read the snapshot it publishes meanwhile.

The child (``python -m retrieval.serve.index_job --index-dir D --root R [--retry-failed]``) prints one JSON
object a line on stdout for each progress event (``{"event": "file", "path": ..., "frames": ..., "ok": ...}``),
and last ``{"event": "done", "report": {...}}``, or ``{"event": "error", "error": "one line"}`` and exit code 1.
``IndexJob`` starts it and follows those lines from a thread; ``IndexJobs`` lets one run at a time.
"""

from __future__ import annotations

import argparse
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

RUNNER = "retrieval.serve.index_job"
MAX_NOTES = 50  # a run's notes are few; a flood of them must not grow the server's memory
STOP_WAIT_S = 10.0  # a stopped run closes its catalog and decode workers; then it is killed


# -- the server's side ----------------------------------------------------------------------------
@dataclass
class IndexJob:
    """One run the app started, as its events tell it: ``kind`` "add" (``files``: the refs it added) or
    "reindex"; ``state`` running, done or failed."""

    kind: str
    files: list[str]
    process: subprocess.Popen
    id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    state: str = "running"
    total: int | None = None  # files the run has to decode, once it knows
    done: int = 0
    current: str | None = None  # the file it reported last
    notes: list[str] = field(default_factory=list)
    report: dict | None = None
    error: str | None = None
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @classmethod
    def start(cls, kind: str, files: Sequence[str], index_dir: Path, root: Path, retry_failed: bool = False,
              include: Sequence[str] = ()) -> "IndexJob":
        """Start the child indexing ``root`` into ``index_dir`` (``include``: removed paths to index again)."""
        command = [sys.executable, "-m", RUNNER, "--index-dir", str(index_dir), "--root", str(root)]
        if retry_failed:
            command.append("--retry-failed")
        command += [arg for rel in include for arg in ("--include", rel)]
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, env=_child_env(),
                                   text=True, encoding="utf-8", errors="replace")
        job = cls(kind, list(files), process)
        threading.Thread(target=job._follow, name=f"index-job-{job.id}", daemon=True).start()
        return job

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
        if self.process.poll() is None:
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
                self._apply(event)
        code = self.process.wait()
        # the state changes only once the child is gone: its catalog is closed and its snapshot published
        with self.lock:
            if code == 0 and self.report is not None:
                self.state = "done"
            else:
                self.state = "failed"
                self.error = self.error or _stopped(code)

    def _apply(self, event: dict) -> None:
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


def _child_env() -> dict:
    """This environment, with the folder holding this package importable however the server was started."""
    env = dict(os.environ)
    top = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (top, env.get("PYTHONPATH")) if p)
    return env


class IndexJobs:
    """The app's index runs: one at a time; the last one stays for ``GET /index/job``."""

    def __init__(self):
        self.last: IndexJob | None = None
        # held while a write is checked and started, so two requests cannot both pass the checks
        self.starting = threading.Lock()

    def running(self) -> IndexJob | None:
        job = self.last
        return job if job is not None and job.running else None

    def start(self, *args, **kwargs) -> IndexJob:
        self.last = IndexJob.start(*args, **kwargs)
        return self.last

    def close(self) -> None:
        """Stop a run still going (the server is stopping)."""
        if self.last is not None:
            self.last.stop()


# -- the child's side -----------------------------------------------------------------------------
def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    emit = _event_stream()
    signal.signal(signal.SIGTERM, _interrupt)  # stopped by the server: close the catalog and the workers first
    try:
        report = _run(args, emit)
    except BaseException as exc:  # the server reads this line, whatever failed; the exit code says so too
        from retrieval.core.errors import one_line

        said = "stopped" if isinstance(exc, KeyboardInterrupt) else one_line(exc, 300)
        emit({"event": "error", "error": said})
        return 1
    emit({"event": "done", "report": report.as_dict()})
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
    return parser


def _event_stream() -> Callable[[dict], None]:
    """A writer of events on stdout; anything else written there (a library's print, C code) goes to stderr."""
    stream = os.fdopen(os.dup(1), "w", encoding="utf-8", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr

    def emit(event: dict) -> None:
        stream.write(json.dumps(event, default=str, ensure_ascii=False) + "\n")
        stream.flush()

    return emit


def _interrupt(_signum, _frame) -> None:
    raise KeyboardInterrupt


if __name__ == "__main__":
    sys.exit(main())
