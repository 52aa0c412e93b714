"""Files a user hands convis (statements, captions, descriptions, benchmark and fusion files): read with a size
limit and, when JSON, parsed with a nesting limit.

A wrong path (``/dev/urandom``, a video given as a text file) or a hostile file then costs one line and a bounded
read, never the machine's memory or a traceback from the JSON parser's recursion.
"""

from __future__ import annotations

import json
import re
from itertools import accumulate
from pathlib import Path
from typing import Any

from retrieval.core.defaults import MiB
from retrieval.core.errors import ConvisError, one_line

# Statements, captions, a concept's descriptions, a local model's config: released captions run to 5,000
# characters and a VidDiff annotation to a few hundred; a megabyte is a book's worth of text.
TEXT_FILE_LIMIT = 1 * MiB
# Benchmark ground truth, predictions and score files, fusion weights, saved perf reports: the ConViS-Bench
# ground truth is 0.2 MB and a model's score files a few MB; parsed JSON takes about ten times its size in memory.
DATA_FILE_LIMIT = 64 * MiB
# Nesting levels a JSON file may have: the formats convis reads nest five deep at most.
JSON_DEPTH_LIMIT = 64


class UserFileError(ConvisError, ValueError):
    """A file the user named cannot be read as the text or JSON asked for: said in one line, exit code 2."""

    exit_code, http_status = 2, 400


def read_limited(path: str | Path, what: str, limit: int, error: type[ConvisError] = UserFileError) -> bytes:
    """The bytes of ``path`` (``what`` names it in the error), at most ``limit`` of them: a longer file, a device
    or a pipe that never ends is refused after reading ``limit + 1`` bytes."""
    try:
        with open(path, "rb") as fh:
            data = fh.read(limit + 1)
    except FileNotFoundError:
        raise error(f"cannot read {what} {path}: no such file") from None
    except IsADirectoryError:
        raise error(f"cannot read {what} {path}: it is a folder, not a file") from None
    except OSError as exc:
        raise error(f"cannot read {what} {path}: {exc.strerror or exc}") from None
    if len(data) > limit:
        raise error(f"{what} {path} is larger than {_size(limit)}, the most convis reads of such a file")
    return data


def read_text(path: str | Path, what: str, limit: int = TEXT_FILE_LIMIT, error: type[ConvisError] = UserFileError,
              errors: str = "strict") -> str:
    """``path`` as UTF-8 text (a BOM dropped), read as :func:`read_limited` reads it; ``errors="replace"`` keeps
    going past bytes that are not UTF-8."""
    data = read_limited(path, what, limit, error)
    try:
        return data.decode("utf-8-sig", errors=errors)
    except UnicodeDecodeError as exc:
        raise error(f"cannot read {what} {path}: it is not UTF-8 text (byte {exc.start}); save it as UTF-8") from None


def read_json(path: str | Path, what: str, limit: int = DATA_FILE_LIMIT,
              error: type[ConvisError] = UserFileError) -> Any:
    """``path`` parsed as JSON, read as :func:`read_text` reads it, nested at most ``JSON_DEPTH_LIMIT`` deep."""
    return parse_json(read_text(path, what, limit, error), f"{what} {path}", error)


def parse_json(text: str, where: str, error: type[ConvisError] = UserFileError) -> Any:
    """``text`` as JSON; ``where`` begins the error line. Nesting is counted before parsing: Python's parser
    recurses once a level and would stop with a RecursionError on a file of ``[[[[...`` many levels deep."""
    depth = json_depth(text)
    if depth > JSON_DEPTH_LIMIT:
        raise error(f"{where} nests more than {JSON_DEPTH_LIMIT} levels deep; convis reads no JSON that deep")
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise error(f"{where} is not valid JSON: {exc.msg} (line {exc.lineno})") from None
    except ValueError as exc:  # an integer of more digits than Python converts (4,300 by default)
        reason = one_line(exc).split(";")[0]  # Python's advice to raise its limit is not the user's to take
        raise error(f"{where} holds a value convis does not read: {reason}") from None
    except RecursionError:  # the counted depth is a bound, not a promise: the stack may already be deep
        raise error(f"{where} nests too deep for convis to read") from None


_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)  # brackets inside strings do not nest
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}


def json_depth(text: str) -> int:
    """How deep the arrays and objects of JSON ``text`` nest (0: a bare value), counted without parsing."""
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", text))
    return max(accumulate(map(_STEP.__getitem__, brackets)), default=0)


def _size(limit: int) -> str:
    return f"{limit // MiB} MiB" if limit >= MiB else f"{limit} bytes"
