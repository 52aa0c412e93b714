"""Files a user hands convis (sidecar subtitles, metadata, statements, drop lists, results, captions, descriptions,
benchmark and fusion files), all read by one rule:

- regular files only: a pipe, a device or a socket is refused with its kind named, and never waited on (the path
  is checked after its symlinks resolve, and opened without blocking, then checked again by its descriptor);
- inside the indexed folder when convis found the file there (``root``): a symlink out of it is refused, as a
  video's is; a file the user named on the command line may be anywhere;
- at most ``limit`` bytes, counted as they are read (``limit + 1`` read at most), never taken from ``st_size``;
- JSON nested at most ``JSON_DEPTH_LIMIT`` deep; text decoded line by line (``decode_lines``): a line that is not
  UTF-8 falls back to cp1252, then latin-1, and the others keep their UTF-8.

A wrong path (``/dev/urandom``, a FIFO, a video given as a text file) or a hostile file then costs one line and a
bounded read, never a hung run, the machine's memory or a traceback from the JSON parser's recursion.
"""

from __future__ import annotations

import json
import os
import re
import stat
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
# after UTF-8 (with or without its byte-order mark), for a line that is not UTF-8; latin-1 never fails
FALLBACK_ENCODINGS = ("cp1252", "latin-1")
_KINDS = ((stat.S_ISDIR, "it is a folder, not a file"), (stat.S_ISFIFO, "it is a pipe, not a file"),
          (stat.S_ISCHR, "it is a device, not a file"), (stat.S_ISBLK, "it is a device, not a file"),
          (stat.S_ISSOCK, "it is a socket, not a file"))


class UserFileError(ConvisError, ValueError):
    """A file the user named cannot be read as the text or JSON asked for: said in one line, exit code 2."""

    exit_code, http_status = 2, 400


def read_limited(path: str | Path, what: str, limit: int, error: type[ConvisError] = UserFileError,
                 root: Path | None = None) -> bytes:
    """The bytes of ``path`` (``what`` names it in the error), at most ``limit`` of them, by the module's rule:
    a regular file (inside ``root`` when given) of at most ``limit`` bytes; anything else is ``error``."""
    try:
        real = Path(path).resolve(strict=True)
        _check_regular(os.stat(real).st_mode, what, path, error)
        if root is not None and not real.is_relative_to(Path(root).resolve()):
            raise _refused(error, what, path, "it points outside the indexed folder")
        # O_NONBLOCK: a FIFO put in its place since the check opens at once instead of waiting for a writer
        fd = os.open(real, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise _refused(error, what, path, "no such file") from None
    except (OSError, RuntimeError) as exc:  # RuntimeError: a symlink loop on some Pythons
        raise _refused(error, what, path, getattr(exc, "strerror", None) or one_line(exc)) from None
    with os.fdopen(fd, "rb") as fh:
        _check_regular(os.fstat(fd).st_mode, what, path, error)
        data = _read_upto(fh, limit + 1, what, path, error)
    if len(data) > limit:
        exc = error(f"{what} {path} is larger than {_size(limit)}, the most convis reads of such a file")
        exc.reason = f"larger than {_size(limit)}"
        raise exc
    return data


def _refused(error: type[ConvisError], what: str, path: str | Path, reason: str) -> ConvisError:
    """``error`` saying why ``path`` is not read, the reason alone in its ``reason`` (a report's short form)."""
    exc = error(f"cannot read {what} {path}: {reason}")
    exc.reason = reason
    return exc


def _check_regular(mode: int, what: str, path: str | Path, error: type[ConvisError]) -> None:
    for is_kind, reason in _KINDS:
        if is_kind(mode):
            raise _refused(error, what, path, reason)
    if not stat.S_ISREG(mode):
        raise _refused(error, what, path, "it is not a regular file")


def _read_upto(fh, most: int, what: str, path: str | Path, error: type[ConvisError]) -> bytes:
    """Up to ``most`` bytes of ``fh``: a short read is not the end, only an empty one is."""
    chunks, got = [], 0
    try:
        while got < most and (chunk := fh.read(min(most - got, 16 * MiB))):
            chunks.append(chunk)
            got += len(chunk)
    except OSError as exc:
        raise _refused(error, what, path, exc.strerror or one_line(exc)) from None
    return b"".join(chunks)


def decode_lines(raw: bytes) -> tuple[str, tuple[str, ...]]:
    """(text, the fallback encodings used, in order, none when all of it is UTF-8): UTF-8 (a byte-order mark
    dropped) line by line; a line that is not UTF-8 is read with the first of ``FALLBACK_ENCODINGS`` that
    reads it, so one stray byte costs its own line, never the rest of a UTF-8 file."""
    raw = raw.removeprefix(b"\xef\xbb\xbf")
    try:
        return raw.decode("utf-8"), ()
    except UnicodeDecodeError:
        pass
    lines, used = [], []
    for line in raw.splitlines(keepends=True):
        for encoding in ("utf-8", *FALLBACK_ENCODINGS):
            try:
                lines.append(line.decode(encoding))
            except UnicodeDecodeError:
                continue
            if encoding != "utf-8" and encoding not in used:
                used.append(encoding)
            break
    return "".join(lines), tuple(used)


def is_unicode(text: str) -> bool:
    """False for text holding half a surrogate pair (JSON's ``"\\ud800"``), which no file, database or terminal
    takes: a reader refuses such a value rather than fail later, far from the file."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


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
