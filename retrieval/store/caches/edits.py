"""The edit cache: an LMM's answers when a composed query's change edits the anchor's texts, so that the same
anchor, change and model make no model call the second time.

An answer is keyed by what made it: the anchor's bytes (content hash) and span, which of its texts (the caption
or a concept's description) and that text itself, the change, the model's id and weights' revision, and the
request's version.  The raw answer is kept (read again on every use), so an answer that cannot be used is not
asked again either.  It lives in a DuckDB file of its own beside the index, opened only for each read or write, as
the anchor cache is; a file that cannot be opened or written (a read-only index, another process writing it)
costs a notice and the model's call, never the query.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

import duckdb

from retrieval.core.errors import one_line
from retrieval.store.caches.anchor import FileTurns

EDITS_NAME = "edits.duckdb"

_FILE_TURNS = FileTurns()


@dataclass(frozen=True)
class EditKey:
    """What an edit is made from; ``digest`` names it in the cache."""

    content_hash: str
    span: str  # "whole", else "start-end" in seconds (``anchor_cache.span_of``)
    name: str  # "caption" or a concept key
    text: str  # the anchor's text as stored: a re-described anchor is edited anew
    change: str
    model: str  # the model's id and weights' revision
    prompt: str  # the request's version

    @property
    def digest(self) -> str:
        parts = (self.content_hash, self.span, self.name, self.text, self.change, self.model, self.prompt)
        return hashlib.blake2b("\0".join(parts).encode(), digest_size=16).hexdigest()


class EditCache:
    SCHEMA = """CREATE TABLE IF NOT EXISTS edits (
        key VARCHAR PRIMARY KEY, content_hash VARCHAR, span VARCHAR, name VARCHAR, change VARCHAR, model VARCHAR,
        prompt VARCHAR, answer VARCHAR, created TIMESTAMP DEFAULT current_timestamp)"""

    def __init__(self, path: str | Path):
        self.path = Path(path)

    def get(self, key: EditKey, notices: list[str]) -> str | None:
        """The answer ``key`` names, or None (nothing cached yet, or the file cannot be read)."""
        if not self.path.is_file():  # nothing cached yet (a read-only connection cannot create the file)
            return None
        try:
            with _FILE_TURNS.read(), duckdb.connect(str(self.path), read_only=True) as db:
                row = db.execute("SELECT answer FROM edits WHERE key = ?", [key.digest]).fetchone()
        except (duckdb.Error, OSError) as exc:
            self._unavailable(exc, notices)
            return None
        return None if row is None else row[0]

    def put(self, key: EditKey, answer: str, notices: list[str]) -> None:
        try:
            with _FILE_TURNS.write(), duckdb.connect(str(self.path)) as db:
                db.execute(self.SCHEMA)
                db.execute("INSERT OR REPLACE INTO edits (key, content_hash, span, name, change, model, prompt, "
                           "answer) VALUES (?,?,?,?,?,?,?,?)", [key.digest, key.content_hash, key.span, key.name,
                                                                key.change, key.model, key.prompt, answer])
        except (duckdb.Error, OSError) as exc:
            self._unavailable(exc, notices)

    def _unavailable(self, exc: BaseException, notices: list[str]) -> None:
        said = f"edit cache {self.path} unavailable"
        if not any(n.startswith(said) for n in notices):  # a read and then a write failing say it once
            notices.append(f"{said} ({one_line(exc, 120)}); the LMM's edits are not cached")
