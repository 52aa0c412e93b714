"""Ranking clips by how much they differ from a reference, and the difference statements a diff is asked.

A candidate's differences are the sum over statements of ``|2 P(a) - 1|`` (``retrieval.lmm.differences``):
the most different ranks first. Statements come from the command line and from a file of statements (plain
lines or JSON, VidDiff's annotations included).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Sequence

from rerankers.prompts.diff import DiffInputError, check_statement
from retrieval.core.user_files import is_unicode, parse_json, read_text
from retrieval.lmm.differences import DiffResult


@dataclass(frozen=True)
class RankedCandidate:
    rank: int
    path: str  # as shown (relative to the index's root when there is one)
    file: str  # the file itself
    differences: float
    result: DiffResult | None  # None: the same video as the reference, nothing asked

    def to_dict(self) -> dict:
        return {"rank": self.rank, "path": self.path, "differences": round(self.differences, 4),
                "result": None if self.result is None else self.result.to_dict()}


@dataclass(frozen=True)
class DiffRanking:
    reference: str
    action: str
    candidates: tuple[RankedCandidate, ...]
    model_calls: int
    notices: tuple[str, ...] = ()
    cached: int = 0  # answers read from the score cache

    def to_dict(self) -> dict:
        return {"reference": self.reference, "action": self.action, "model_calls": self.model_calls,
                "cached_answers": self.cached,
                "candidates": [c.to_dict() for c in self.candidates], "notices": list(self.notices)}


def rank_by_difference(results: Sequence[tuple[str, str, DiffResult | None]]) -> list[RankedCandidate]:
    """(shown path, file, result) ranked most different first: by the sum of strengths, then by the number of
    decided statements, then path; a candidate without a result (the reference itself) last."""
    def order(item):
        path, _, result = item
        if result is None:
            return (1, 0.0, 0, path)
        decided = sum(v.prediction is not None for v in result.scored)
        return (0, -result.differences, -decided, path)

    ranked = sorted(results, key=order)
    return [RankedCandidate(i, path, file, 0.0 if r is None else r.differences, r)
            for i, (path, file, r) in enumerate(ranked, 1)]


def gather_statements(given: Sequence[str], path: str | None) -> dict[str, str]:
    """Statements from ``--statement`` (keys "0", "1", ... in order) and a ``--statements`` file (its own keys,
    or numbers after the given ones); a key given twice is an error, as is no statement at all."""
    statements = {str(i): check_statement(text) for i, text in enumerate(given)}
    if path is not None:
        for key, text in read_statements(path):
            key = key if key is not None else str(len(statements))
            if key in statements:
                raise DiffInputError(f"statement key {key!r} is given twice")
            statements[key] = text
    if not statements:
        raise DiffInputError("no difference statements: give --statement TEXT or --statements FILE (or --open N)")
    return statements


def read_statements(path: str) -> list[tuple[str | None, str]]:
    """A statements file: one statement a line ('#' lines and blank lines skipped), or JSON: a list of strings,
    {key: text}, or VidDiff's ``differences_annotated`` ({key: {"description": text}}, null entries skipped).
    Keys are None where the file gives none (numbered in ``gather_statements``)."""
    text = read_text(path, "statements file", error=DiffInputError)
    stripped = text.strip()
    entries = _json_statements(stripped, path) if stripped[:1] in ("[", "{") else \
        [(None, line) for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    if not entries:
        raise DiffInputError(f"{path} holds no difference statements")
    if not all(is_unicode(f"{key}{statement}") for key, statement in entries):
        raise DiffInputError(f"{path}: a statement or its key holds half a surrogate pair (a JSON \\ud800 escape "
                             "alone): not text a model is asked")
    return [(key, check_statement(statement)) for key, statement in entries]


def _json_statements(text: str, path: str) -> list[tuple[str | None, str]]:
    data = parse_json(text, path, DiffInputError)
    if isinstance(data, list):
        return [(None, _statement_text(v, path)) for v in data]
    return [(str(k), _statement_text(v, path)) for k, v in data.items() if v is not None]


def _statement_text(value, path: str) -> str:
    if isinstance(value, dict):
        value = value.get("description")
    if not isinstance(value, str):
        raise DiffInputError(f"{path}: a statement is not text: {json.dumps(value)[:60]}")
    return value
