"""The edit cache: an LMM's answers when a composed query's change edits the anchor's texts, so that the same
anchor, change and model make no model call the second time.

An answer is keyed by what made it: the anchor's bytes (content hash) and span, which of its texts (the caption
or a concept's description) and that text itself, the change, the model's id and weights' revision, and the
request's version.  The raw answer is kept (read again on every use), so an answer that cannot be used is not
asked again either.  It lives in a DuckDB file of its own beside the index (a side cache:
``retrieval.store.caches.base``), opened only for each read or write, as the anchor cache is; a file that cannot
be opened or written (a read-only index, another process writing it) costs a notice and the model's call, never
the query.
"""

from __future__ import annotations

from dataclasses import dataclass

from retrieval.store.caches.base import SideCache, digest

EDITS_NAME = "edits.duckdb"


@dataclass(frozen=True)
class EditKey:
    """What an edit is made from; ``digest`` names it in the cache."""

    content_hash: str
    span: str  # "whole", else "start-end" in seconds (``anchor.span_of``)
    name: str  # "caption" or a concept key
    text: str  # the anchor's text as stored: a re-described anchor is edited anew
    change: str
    model: str  # the model's id and weights' revision
    prompt: str  # the request's version

    @property
    def digest(self) -> str:
        return digest(self.content_hash, self.span, self.name, self.text, self.change, self.model, self.prompt)


class EditCache(SideCache):
    LABEL, LOST = "edit cache", "the LMM's edits are not cached"
    TABLE = "edits"
    SCHEMA = """CREATE TABLE IF NOT EXISTS edits (
        key VARCHAR PRIMARY KEY, content_hash VARCHAR, span VARCHAR, name VARCHAR, change VARCHAR, model VARCHAR,
        prompt VARCHAR, answer VARCHAR, created TIMESTAMP DEFAULT current_timestamp)"""
    KEY, VALUE = ("key",), ("answer",)
    COLUMNS = ("key", "content_hash", "span", "name", "change", "model", "prompt", "answer")

    def get(self, key: EditKey, notices: list[str]) -> str | None:
        """The answer ``key`` names, or None (nothing cached yet, or the file cannot be read)."""
        row = self.get_many([(key.digest,)], notices).get((key.digest,))
        return None if row is None else row[0]

    def put(self, key: EditKey, answer: str, notices: list[str]) -> None:
        self.put_many([(key.digest, key.content_hash, key.span, key.name, key.change, key.model, key.prompt,
                        answer)], notices)
