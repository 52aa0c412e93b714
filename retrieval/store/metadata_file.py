"""A user's metadata file (``convis index --metadata FILE``): CSV with a ``path`` column, or JSON Lines with a
``path`` key, one row per video, every other column or key a field.

Bad rows never stop the rest: each kind of problem (bytes that are not UTF-8, a row that does not parse, a path
the index does not hold, a path given twice, a field named twice in a row, a field named like a built-in one, a
value that is not text, a number or a list) is counted and said in one line, and every good row is kept.
A row is one line: a CSV line parses alone (an unterminated quote or an over-long field costs that line, never
the lines after it), a JSON line nested deeper than ``JSON_DEPTH_LIMIT`` is not parsed, and text JSON escapes
into half a surrogate pair (no file or database holds it) is a value skipped.
"""

from __future__ import annotations

import csv
import json
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Iterator

from retrieval.core.defaults import MiB
from retrieval.core.errors import ConvisError
from retrieval.core.user_files import JSON_DEPTH_LIMIT, is_unicode, json_depth, read_limited
from retrieval.store.where import BUILTIN, MAX_VALUE_CHARS

FIELD_NAME = re.compile(r"[A-Za-z_][\w.-]{0,63}")
SUFFIXES = {".csv": "csv", ".jsonl": "jsonl", ".ndjson": "jsonl"}
EXAMPLES = 3  # of the paths or names a problem line quotes
# a million videos with a few hundred bytes of fields each; read whole, so more is refused, not swapped for
METADATA_FILE_LIMIT = 256 * MiB


class MetadataFileError(ConvisError, ValueError):
    """The metadata file cannot be read at all: missing, unreadable, of an unknown format or without paths."""

    exit_code, http_status = 2, 400


@dataclass
class MetadataRows:
    """What a metadata file gives: (path, field, value) rows, and one line per kind of problem met."""

    rows: list[tuple[str, str, str]] = field(default_factory=list)
    problems: Counter = field(default_factory=Counter)  # kind -> how many
    examples: dict[str, list[str]] = field(default_factory=dict)  # kind -> a few of the paths or names

    def problem(self, kind: str, example: str | None = None) -> None:
        self.problems[kind] += 1
        shown = self.examples.setdefault(kind, [])
        if example is not None:  # a lone surrogate or a control character shown escaped: a report line is text
            example = example.encode("unicode_escape").decode("ascii") if not example.isprintable() else example
        if example is not None and len(shown) < EXAMPLES and example not in shown:
            shown.append(example.encode("utf-8", "backslashreplace").decode())  # a lone surrogate prints

    def lines(self, name: str) -> list[str]:
        """One line per kind of problem, with how many rows it took and a few examples."""
        out = []
        for kind, count in self.problems.items():
            seen = self.examples.get(kind)
            out.append(f"{name}: {count:,} {kind}" + (f" (e.g. {', '.join(seen)})" if seen else ""))
        return out


def read(path: Path, indexed: set[str]) -> MetadataRows:
    """The rows of ``path`` for the files in ``indexed`` (root-relative paths)."""
    kind = SUFFIXES.get(path.suffix.lower())
    if kind is None:
        raise MetadataFileError(f"--metadata {path.name}: give a .csv or .jsonl file")
    raw = read_limited(path, "--metadata", METADATA_FILE_LIMIT, MetadataFileError)
    found = MetadataRows()
    lines = _decoded(raw.splitlines(), found)
    records = _csv_records(lines, found) if kind == "csv" else _jsonl_records(lines, found)
    _keep(records, indexed, found)
    return found


def _decoded(lines: list[bytes], found: MetadataRows) -> Iterator[str]:
    for number, line in enumerate(lines, 1):
        try:
            yield line.decode("utf-8-sig" if number == 1 else "utf-8")
        except UnicodeDecodeError:
            found.problem("rows not in UTF-8: skipped", f"line {number}")
            yield ""  # a blank line in its place: the lines after it keep their numbers


def _csv_records(lines: Iterable[str], found: MetadataRows) -> Iterator[tuple[str, list[tuple[str, object]]]]:
    rows = _csv_rows(lines, found)
    header = [h.strip() for h in next(rows, [])]
    if "path" not in header:
        raise MetadataFileError("--metadata: the CSV file needs a header row with a 'path' column")
    at = header.index("path")
    for row in rows:
        if not any(cell.strip() for cell in row):
            continue
        if len(row) != len(header):
            found.problem(f"rows without {len(header)} columns: skipped", row[at] if len(row) > at else None)
            continue
        yield row[at].strip(), [(h, v) for i, (h, v) in enumerate(zip(header, row, strict=True)) if i != at and v]


def _csv_rows(lines: Iterable[str], found: MetadataRows) -> Iterator[list[str]]:
    """Each line's cells, parsed alone: a quote left open or a field past the csv module's limit costs its line."""
    for number, line in enumerate(lines, 1):
        try:
            yield next(csv.reader((line,), strict=True), [])
        except csv.Error:
            found.problem("rows that do not parse as CSV (a quote left open, a field too long): skipped",
                          f"line {number}")


def _jsonl_records(lines: Iterable[str], found: MetadataRows) -> Iterator[tuple[str, list[tuple[str, object]]]]:
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        if json_depth(line) > JSON_DEPTH_LIMIT:
            found.problem(f"rows nested more than {JSON_DEPTH_LIMIT} levels deep: skipped", f"line {number}")
            continue
        try:
            pairs = json.loads(line, object_pairs_hook=lambda p: p)
        except (ValueError, RecursionError):
            found.problem("rows that are not JSON objects: skipped", f"line {number}")
            continue
        if not isinstance(pairs, list) or not pairs or not isinstance(pairs[0], tuple):
            found.problem("rows that are not JSON objects: skipped", f"line {number}")
            continue
        paths = [v for k, v in pairs if k == "path"]
        if not paths or not isinstance(paths[-1], str):
            found.problem("rows without a \"path\" string: skipped", f"line {number}")
            continue
        yield paths[-1].strip(), [(k, v) for k, v in pairs if k != "path"]


def _keep(records: Iterable[tuple[str, list[tuple[str, object]]]], indexed: set[str], found: MetadataRows) -> None:
    """The good fields of the rows whose path the index holds; the last row of a path given twice wins."""
    by_path: dict[str, dict[str, str]] = {}
    for raw_path, pairs in records:
        rel = raw_path.replace("\\", "/").removeprefix("./")
        if rel not in indexed:
            found.problem("rows name a path the index does not hold: skipped", rel or "''")
            continue
        if rel in by_path:
            found.problem("paths appear in more than one row: the last row kept", rel)
        by_path[rel] = _fields(pairs, rel, found)
    found.rows = [(path, key, value) for path, values in by_path.items() for key, value in values.items()]


def _fields(pairs: list[tuple[str, object]], rel: str, found: MetadataRows) -> dict[str, str]:
    values: dict[str, str] = {}
    for key, raw in pairs:
        key = str(key).strip()
        if key.lower() in BUILTIN:
            found.problem("fields named like a built-in field (the file's own value is kept): skipped", key)
        elif not FIELD_NAME.fullmatch(key):
            found.problem("field names that are not a letter then letters, digits, '_', '-', '.': skipped", key)
        elif key in values:
            found.problem("rows name a field twice: the last value kept", f"{rel} {key}")
            values[key] = _text(raw)
        else:
            value = _text(raw)
            if value is None:
                found.problem("values that are not text, a number, true/false or a list of them: skipped",
                              f"{rel} {key}")
            elif len(value) > MAX_VALUE_CHARS:
                found.problem(f"values longer than {MAX_VALUE_CHARS} characters: skipped", f"{rel} {key}")
            elif value != "":
                values[key] = value
    return {k: v for k, v in values.items() if v is not None}


def _text(value: object) -> str | None:
    """A value as stored: text as given, a number or true/false as written, a list as comma-separated items."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (str, int, float)):
        text = str(value).strip()
    elif isinstance(value, list) and all(isinstance(v, (str, int, float)) and not isinstance(v, bool) for v in value):
        text = ",".join(str(v).strip() for v in value)
    else:
        return None
    return text if is_unicode(text) else None

