"""Files a user names are read with a size limit and JSON with a nesting limit: one line, never a traceback."""

import inspect
import json
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


def test_a_device_that_never_ends_is_read_up_to_the_limit():
    with pytest.raises(UserFileError, match="larger than 1 MiB"):
        read_limited("/dev/zero", "statements file", TEXT_FILE_LIMIT)


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
