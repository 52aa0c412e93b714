"""Every reader of a file the user names, over hostile files: a pipe, an endless device, a file past its limit,
lines nested deep, half surrogate pairs, bytes in other encodings or none. Each ends in counted problems or one
line of the reader's own error, and the good lines among the hostile ones are all kept."""

import json
import os
import tempfile
from pathlib import Path
from unittest.mock import patch

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rerankers.prompts.diff import DiffInputError
from retrieval.analysis.diff import read_statements
from retrieval.cli import drop_list
from retrieval.cli.options import UserError
from retrieval.core.errors import ConvisError
from retrieval.core.user_files import is_unicode
from retrieval.media import subtitles
from retrieval.store import metadata_file
from retrieval.store.export import files as export_files
from retrieval.store.export import results

CHEAP = settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
KINDS = st.sampled_from(["lines", "lines", "lines", "pipe", "device", "huge"])


def _one_line(text: bytes) -> bytes:
    return text.replace(b"\n", b" ").replace(b"\r", b" ")


HOSTILE_LINE = st.one_of(
    st.binary(max_size=40).map(_one_line),  # bytes in no encoding
    st.integers(65, 400).map(lambda n: b"[" * n + b"]" * n),  # nested deeper than any reader takes
    st.sampled_from([b'{"path": "a.mp4", "team": "\\ud800"}', b'["\\udc00 left"]', b"\xed\xa0\x80",
                     b'"unterminated, quote', b"x" * 140_000]),  # half surrogates, an open quote, a huge field
    st.text("\u00e9\u00e8\u00fc\u00df\u20ac abc,", max_size=20).map(lambda t: t.encode("cp1252")),  # other encoding
    st.text(max_size=20).map(lambda t: _one_line(t.encode("utf-8", "surrogatepass"))),  # surrogates as bytes
)


def hostile_file(folder: Path, name: str, kind: str, good: list[bytes], bad: list[bytes], head: bytes = b"") -> Path:
    """``folder/name`` as ``kind``: a pipe without a writer, a link to /dev/zero, or ``head`` then the good and
    bad lines interleaved (``huge``: the same, read under a limit it passes)."""
    path = folder / name
    if kind == "pipe":
        os.mkfifo(path)
    elif kind == "device":
        path.symlink_to("/dev/zero")
    else:
        body = [line for pair in zip(good, bad + [b""] * len(good), strict=False) for line in pair] + bad[len(good):]
        path.write_bytes(head + b"\n".join(body) + b"\n")
    return path


def refused(call, error: type[ConvisError], kind: str, limit: tuple | None = None):
    """``call()``'s result, or None when it raised ``error`` in one line of text (the only way a special file or
    one past its limit may end)."""
    try:
        if kind == "huge" and limit is not None:
            with patch.object(*limit, 16):  # every file here holds more
                return call()
        return call()
    except error as exc:
        message = str(exc)
        assert "\n" not in message and is_unicode(message) and message
        return None


def _must_refuse(result, kind: str) -> None:
    assert result is None or kind == "lines", f"a {kind} was read"


@CHEAP
@given(kind=KINDS, bad=st.lists(HOSTILE_LINE, max_size=6))
def test_sidecar(kind, bad):
    good = [f"{i}\n00:00:{i:02d},000 --> 00:00:{i:02d},500\ncaf\u00e9 {i}\n".encode() for i in range(1, 4)]
    with tempfile.TemporaryDirectory() as folder:
        path = hostile_file(Path(folder), "cup.srt", kind, good, [b"\n" + line + b"\n" for line in bad])
        with patch.object(subtitles, "SIDECAR_LIMIT", 16 if kind == "huge" else subtitles.SIDECAR_LIMIT):
            read = subtitles.read_sidecar(path, Path(folder))
    if kind != "lines":
        assert read.cues == [] and read.problems == {"unreadable": 1} and read.reason
        return
    assert set(read.problems) <= set(subtitles.PROBLEMS) and "unreadable" not in read.problems
    kept = {cue.start: cue.text for cue in read.cues}
    for i in range(1, 4):  # every good cue, its UTF-8 whole whatever the lines around it hold
        assert f"caf\u00e9 {i}" in kept[float(i)]


@CHEAP
@given(kind=KINDS, bad=st.lists(HOSTILE_LINE, max_size=6), fmt=st.sampled_from(["csv", "jsonl"]))
def test_metadata(kind, bad, fmt):
    indexed = {"a.mp4", "b.mp4", "c.mp4", "d.mp4"}
    if fmt == "csv":
        good, head = [f"{p},caf\u00e9".encode() for p in ("b.mp4", "c.mp4", "d.mp4")], b"path,team\n"
    else:
        good, head = [json.dumps({"path": p, "team": "caf\u00e9"}).encode() for p in ("b.mp4", "c.mp4", "d.mp4")], b""
    bad = [line for line in bad if b"b.mp4" not in line and b"c.mp4" not in line and b"d.mp4" not in line]
    with tempfile.TemporaryDirectory() as folder:
        path = hostile_file(Path(folder), f"meta.{fmt}", kind, good, bad, head)
        read = refused(lambda: metadata_file.read(path, indexed), metadata_file.MetadataFileError, kind,
                       (metadata_file, "METADATA_FILE_LIMIT"))
    _must_refuse(read, kind)
    if read is not None:
        assert {("b.mp4", "team", "caf\u00e9"), ("c.mp4", "team", "caf\u00e9"), ("d.mp4", "team", "caf\u00e9")} \
            <= set(read.rows)
        assert all("\n" not in line and is_unicode(line) for line in read.lines("meta"))
        assert sum(read.problems.values()) >= sum(bool(line.strip()) for line in bad) * (fmt == "jsonl")


@CHEAP
@given(kind=KINDS, bad=st.lists(HOSTILE_LINE, max_size=6))
def test_statements(kind, bad):
    good = [f"the left arm is higher {i}".encode() for i in range(3)]
    with tempfile.TemporaryDirectory() as folder:
        path = hostile_file(Path(folder), "statements.txt", kind, good, bad)
        if kind == "huge":
            path.write_bytes(b"a wider stance\n" * (1 << 17))  # past the 1 MiB of a text file
        found = refused(lambda: read_statements(str(path)), DiffInputError, kind)
    _must_refuse(found, kind)
    if found is not None:
        assert {f"the left arm is higher {i}" for i in range(3)} <= {text for _, text in found}


@CHEAP
@given(kind=KINDS, bad=st.lists(HOSTILE_LINE, max_size=6))
def test_drop_list(kind, bad):
    good = [f"clips/caf\u00e9 {i}.mp4".encode() for i in range(3)]
    with tempfile.TemporaryDirectory() as folder:
        path = hostile_file(Path(folder), "drop.txt", kind, good, bad)
        listed = refused(lambda: drop_list.read_drop_list(path), UserError, kind, (drop_list, "MOST_BYTES"))
    _must_refuse(listed, kind)
    if listed is not None:
        assert {g.decode() for g in good} <= set(listed)


HIT = {"rank": 1, "path": "caf\u00e9.mp4", "segment": 0, "start": 0.0, "end": 2.0, "total": 0.5}
HOSTILE_VALUE = st.one_of(
    st.integers(-(10**40), 10**40), st.floats(), st.text(max_size=10),
    st.sampled_from(["\ud800", "a\udc00b", None, [], {"deep": [[[[]]]]}]),
)


@CHEAP
@given(kind=KINDS, key=st.sampled_from(sorted(HIT) + ["scores", "confidence"]), value=HOSTILE_VALUE,
       deep=st.integers(0, 200))
def test_results(kind, key, value, deep):
    answer = {"anchor": "a", "concepts": [], "scored_by": "x", "hits": [dict(HIT), {**HIT, key: value}]}
    text = json.dumps(answer)[:-1] + ', "extra": ' + "[" * deep + "]" * deep + "}"
    with tempfile.TemporaryDirectory() as folder:
        path = hostile_file(Path(folder), "results.json", kind, [text.encode()], [])

        def table():
            return results._table(results.read_results(path))

        got = refused(table, export_files.ExportError, kind, (results, "DATA_FILE_LIMIT"))
    _must_refuse(got, kind)
    if got is not None:
        assert got.num_rows == 2 and got.column("path")[0].as_py() == "caf\u00e9.mp4"
