"""The models a request over the index needs, built in a thread of their own once the server listens, and what
/health says of them.

Building them at start-up kept the server from answering for seconds (torch, the weights); building them on the
first request made that request slow.  Here the server answers at once, the models are built behind it (text
towers first: every text search asks them), and /health tells a client what is warm so it can wait.  A request
that needs a model still being built waits for that build (the engine builds each model once); requests that
need none never wait.
"""

from __future__ import annotations

import threading

from retrieval.api import INDEXER, TEXT_TOWER, Engine, WarmStep, one_line

PLANNING = "the index's models"  # what /health lists as warming before the index has been read


class Warmup:
    def __init__(self, engine: Engine):
        self.engine = engine
        self.notices: list[str] = []  # models that could not be built, and why
        self._lock = threading.Lock()
        self._steps: list[WarmStep] | None = None  # None: the index not read yet
        self._built: dict[WarmStep, bool] = {}
        self._thread: threading.Thread | None = None

    def start(self, after: float = 0.0) -> None:
        """Warm in a daemon thread (once), ``after`` seconds from now: stopping the server never waits for a model
        being built."""
        with self._lock:
            if self._thread is None:
                self._thread = threading.Timer(after, self._run)
                self._thread.name, self._thread.daemon = "convis-warmup", True
                self._thread.start()

    def join(self, timeout: float | None = None) -> None:
        if self._thread is not None:
            self._thread.join(timeout)

    def _run(self) -> None:
        try:
            steps = self.engine.warm_plan(self.notices)
        except Exception as exc:  # a busy or damaged catalog: requests say so themselves; nothing is warmed
            self.notices.append(f"models not warmed: {one_line(exc, 200)}")
            steps = []
        with self._lock:
            self._steps = steps
        self.engine.warm(steps, self.notices, self._done)

    def _done(self, step: WarmStep, built: bool) -> None:
        with self._lock:
            self._built[step] = built

    def status(self) -> dict:
        """``warm``: each model to warm, by signal name, under ``text_towers`` or ``indexers``: true once built;
        ``warming``: those not yet built nor given up on, in building order (empty: nothing left to wait for;
        before warming starts, or without it, nothing is listed and models are built when first asked)."""
        with self._lock:
            started, steps, built = self._thread is not None, self._steps, dict(self._built)
        if started and steps is None:
            return {"warm": {"text_towers": {}, "indexers": {}}, "warming": [PLANNING]}
        steps = steps or []
        warm = {kind: {s.name: built.get(s, False) for s in steps if s.kind == kind} for kind in (TEXT_TOWER, INDEXER)}
        return {"warm": {"text_towers": warm[TEXT_TOWER], "indexers": warm[INDEXER]},
                "warming": [s.label for s in steps if s not in built]}
