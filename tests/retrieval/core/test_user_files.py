"""Files a user names are read with a size limit and JSON with a nesting limit: one line, never a traceback."""

import inspect
import json
import os
import socket
import sys

import pytest

from bench.loaders import BenchDataError, load_pair_scores
from indexers.base import INDEXERS
from indexers.text import read_captions
from rerankers.prompts.diff import DiffInputError
from retrieval.analysis.diff import read_statements
from retrieval.core.user_files import (
    JSON_DEPTH_LIMIT,
    TEXT_FILE_LIMIT,
    UserFileError,
    decode_lines,
    json_depth,
    parse_json,
    read_limited,
    read_text,
)
from retrieval.search.fusion import FusionError, FusionModel


def deep(levels: int) -> str:
    return "[" * levels + "]" * levels


@pytest.mark.parametrize("text, depth", [
    ("3", 0), ("[]", 1), ('{"a": [1, {"b": []}]}', 4), ('["[[[[", "\\"[["]', 1), ('{"k\\\\": "]]]"}', 1),
])
def test_depth_is_counted_outside_strings(text, depth):
    assert json_depth(text) == depth
    json.loads(text)  # each case is valid JSON


def test_json_at_the_limit_parses_and_deeper_is_one_error():
    assert parse_json(deep(JSON_DEPTH_LIMIT), "x") == json.loads(deep(JSON_DEPTH_LIMIT))
    with pytest.raises(UserFileError, match=f"nests more than {JSON_DEPTH_LIMIT} levels"):
        parse_json(deep(100_000), "x")


def test_a_device_a_pipe_or_a_socket_is_refused_by_kind_and_never_read(tmp_path):
    fifo = tmp_path / "list.txt"
    os.mkfifo(fifo)  # no writer: opening it to read would wait forever
    (tmp_path / "zero.txt").symlink_to("/dev/zero")
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(tmp_path / "sock.txt"))
    try:
        for name, says in (("list.txt", "a pipe"), ("zero.txt", "a device"), ("sock.txt", "a socket")):
            with pytest.raises(UserFileError, match=f"{name}: it is {says}, not a file") as caught:
                read_limited(tmp_path / name, "statements file", TEXT_FILE_LIMIT)
            assert caught.value.reason == f"it is {says}, not a file"
    finally:
        server.close()


def test_the_limit_counts_bytes_read_not_the_size_the_file_claims():
    assert os.stat("/proc/self/status").st_size == 0  # a file that says it is empty and is not
    with pytest.raises(UserFileError, match="larger than 16 bytes") as caught:
        read_limited("/proc/self/status", "list", 16)
    assert caught.value.reason == "larger than 16 bytes"


def test_a_file_found_under_the_root_may_not_point_outside_it(tmp_path):
    root, outside = tmp_path / "root", tmp_path / "elsewhere.srt"
    root.mkdir()
    outside.write_text("words")
    (root / "inside.srt").write_text("kept")
    (root / "link.srt").symlink_to(outside)
    (root / "near.srt").symlink_to(root / "inside.srt")
    assert read_limited(root / "near.srt", "subtitle file", 100, root=root) == b"kept"
    with pytest.raises(UserFileError, match="it points outside the indexed folder"):
        read_limited(root / "link.srt", "subtitle file", 100, root=root)
    assert read_limited(root / "link.srt", "subtitle file", 100) == b"words"  # named by the user: anywhere


def test_each_line_that_is_not_utf8_falls_back_alone():
    raw = "caf\u00e9 au lait\n".encode() + b"cr\xe8me\r\n" + "na\u00efve\n".encode() + b"\x81\n"
    assert decode_lines(raw) == ("caf\u00e9 au lait\ncr\u00e8me\r\nna\u00efve\n\x81\n", ("cp1252", "latin-1"))
    assert decode_lines(b"\xef\xbb\xbfplain") == ("plain", ())


def test_a_file_at_the_limit_is_read_and_one_byte_more_is_refused(tmp_path):
    path = tmp_path / "s.txt"
    path.write_bytes(b"a" * TEXT_FILE_LIMIT)
    assert len(read_text(path, "statements file")) == TEXT_FILE_LIMIT
    path.write_bytes(b"a" * (TEXT_FILE_LIMIT + 1))
    with pytest.raises(UserFileError, match="larger than"):
        read_text(path, "statements file")


def test_missing_folder_and_non_utf8_are_one_line(tmp_path):
    for path, says in ((tmp_path / "none.txt", "no such file"), (tmp_path, "is a folder")):
        with pytest.raises(UserFileError, match=says):
            read_text(path, "caption")
    (tmp_path / "bad.txt").write_bytes(b"\xff\xfe")
    with pytest.raises(UserFileError, match="not UTF-8"):
        read_text(tmp_path / "bad.txt", "caption")


def test_statements_file_too_large_or_too_deep_is_a_diff_input_error(tmp_path):
    big = tmp_path / "big.txt"
    big.write_text("a wider stance\n" * (TEXT_FILE_LIMIT // 15 + 1))
    with pytest.raises(DiffInputError, match="larger than 1 MiB"):
        read_statements(str(big))
    nested = tmp_path / "deep.json"
    nested.write_text(deep(100_000))
    with pytest.raises(DiffInputError, match="nests more than"):
        read_statements(str(nested))


def test_bench_fusion_and_caption_files_are_bounded(tmp_path):
    nested = tmp_path / "scores.json"
    nested.write_text(deep(100_000))
    with pytest.raises(BenchDataError, match="nests more than"):
        load_pair_scores(nested)
    with pytest.raises(FusionError, match="nests more than"):
        FusionModel.load(nested)
    captions = tmp_path / "captions"
    captions.mkdir()
    (captions / "a.txt").write_bytes(b"x" * (TEXT_FILE_LIMIT + 1))
    with pytest.raises(UserFileError, match="caption .*a.txt is larger than"):
        read_captions(captions)


def test_a_number_beyond_pythons_digit_limit_is_the_callers_error(tmp_path):
    big = tmp_path / "config.json"
    big.write_text('{"model_type": ' + "1" * 5000 + "}")
    with pytest.raises(UserFileError, match="holds a value convis does not read"):
        parse_json(big.read_text(), "x")
    with pytest.raises(FusionError, match="holds a value convis does not read"):
        FusionModel.load(big)
    folder = tmp_path / "my-clip"  # a local model whose config cannot be read is known by its folder's name
    folder.mkdir()
    big.rename(folder / "config.json")
    assert INDEXERS.resolve(str(folder)).entry.name == "clip"


def test_json_within_the_depth_limit_on_an_almost_full_stack_is_the_callers_error():
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(len(inspect.stack(0)) + 40)  # the parser's 64 levels no longer fit
    try:
        with pytest.raises(UserFileError, match="x nests too deep for convis to read"):
            parse_json(deep(JSON_DEPTH_LIMIT), "x")
    finally:
        sys.setrecursionlimit(limit)
