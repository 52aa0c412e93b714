"""A metadata file with bad rows keeps its good ones and says each kind of problem in one line: unknown paths,
paths or fields given twice, bytes that are not UTF-8, rows that do not parse; a million rows are read whole."""

import json
import os
import time

import numpy as np
import pytest

from retrieval.store import metadata_file
from retrieval.store.catalog import Catalog
from retrieval.store.catalog.fields import MAX_FIELD_NAMES, MAX_FIELDS_PER_FILE, FieldLimitError
from retrieval.store.catalog.records import FileRecord, UnitRecord
from retrieval.store.user_fields import FieldError, apply_metadata, parse_assignments

INDEXED = {"a.mp4", "sub/b.mp4", "c.mp4"}


def _lines(read) -> list[str]:
    return read.lines("meta")


def test_csv_rows_become_fields_and_each_problem_is_one_line(tmp_path):
    path = tmp_path / "meta.csv"
    path.write_bytes(b"path,team,rating,duration\n"
                     b"a.mp4,red,4,99\n"
                     b"./sub/b.mp4,blue,,\n"
                     b"gone.mp4,green,1,\n"
                     b"missing-too.mp4,green,1,\n"
                     b"c.mp4,\xff\xfe,2,\n"
                     b"a.mp4,red,5,\n"
                     b"short.mp4\n")
    read = metadata_file.read(path, INDEXED)
    assert sorted(read.rows) == [("a.mp4", "rating", "5"), ("a.mp4", "team", "red"), ("sub/b.mp4", "team", "blue")]
    assert _lines(read) == [
        "meta: 1 fields named like a built-in field (the file's own value is kept): skipped (e.g. duration)",
        "meta: 2 rows name a path the index does not hold: skipped (e.g. gone.mp4, missing-too.mp4)",
        "meta: 1 rows not in UTF-8: skipped (e.g. line 6)",
        "meta: 1 paths appear in more than one row: the last row kept (e.g. a.mp4)",
        "meta: 1 rows without 4 columns: skipped (e.g. short.mp4)",
    ]


def test_jsonl_rows_lists_and_a_field_named_twice(tmp_path):
    path = tmp_path / "meta.jsonl"
    path.write_text("\n".join([
        json.dumps({"path": "a.mp4", "tags": ["goal", "corner"], "night": True, "speed": 3.5}),
        '{"path": "c.mp4", "team": "red", "team": "blue"}',
        "not json",
        json.dumps({"path": "sub/b.mp4", "nested": {"x": 1}}),
        json.dumps(["a.mp4"]),
    ]))
    read = metadata_file.read(path, INDEXED)
    assert sorted(read.rows) == [("a.mp4", "night", "true"), ("a.mp4", "speed", "3.5"),
                                 ("a.mp4", "tags", "goal,corner"), ("c.mp4", "team", "blue")]
    assert len(_lines(read)) == 3 and "rows name a field twice: the last value kept (e.g. c.mp4 team)" in \
        " ".join(_lines(read))


@pytest.mark.parametrize("name, content, says", [
    ("meta.txt", "path\n", "give a .csv or .jsonl file"),
    ("meta.csv", "file,team\na.mp4,red\n", "needs a header row with a 'path' column"),
])
def test_a_file_that_cannot_be_read_at_all_is_one_line(tmp_path, name, content, says):
    (tmp_path / name).write_text(content)
    with pytest.raises(metadata_file.MetadataFileError, match=says):
        metadata_file.read(tmp_path / name, INDEXED)


def test_a_million_rows_are_read_and_stored_with_the_unknown_counted_once(tmp_path):
    path = tmp_path / "meta.csv"
    rows = [f"clip{i:07d}.mp4,{i % 7}" for i in range(1_000_000)]
    path.write_text("path,score\n" + "\n".join(rows + ["a.mp4,3", "c.mp4,4"]) + "\n")
    with Catalog(tmp_path / "catalog.duckdb") as catalog:
        for name in ("a.mp4", "c.mp4", "clip0000001.mp4"):
            catalog.commit_file(FileRecord(name, 1, 1.0, f"h-{name}", 1.0, 25.0, 8, 8, 25, "pyav"),
                                [UnitRecord(0, 0.0, 1.0, (0.5,))], {"tiny": np.ones((1, 4), np.float32)})
        notices: list[str] = []
        started = time.monotonic()
        assert apply_metadata(catalog, path, notices) == 3
        assert time.monotonic() - started < 60
        assert notices == ["meta.csv: 999,999 rows name a path the index does not hold: skipped "
                           "(e.g. clip0000000.mp4, clip0000002.mp4, clip0000003.mp4)"]
        assert catalog.file_fields() == {"a.mp4": {"score": "3"}, "c.mp4": {"score": "4"},
                                         "clip0000001.mp4": {"score": "1"}}


def test_a_changed_file_is_re_read_and_a_tag_outranks_it(tmp_path):
    path = tmp_path / "meta.csv"
    path.write_text("path,team\na.mp4,red\nc.mp4,red\n")
    with Catalog(tmp_path / "catalog.duckdb") as catalog:
        for name in ("a.mp4", "c.mp4"):
            catalog.commit_file(FileRecord(name, 1, 1.0, f"h-{name}", 1.0, 25.0, 8, 8, 25, "pyav"),
                                [UnitRecord(0, 0.0, 1.0, (0.5,))], {"tiny": np.ones((1, 4), np.float32)})
        assert apply_metadata(catalog, path, []) == 2
        catalog.tag(["c.mp4"], {"team": "gold"}, [])
        assert apply_metadata(catalog, None, []) is None  # unchanged: not read again
        path.write_text("path,team\na.mp4,blue\nc.mp4,blue\n")
        assert apply_metadata(catalog, None, []) == 2
        assert catalog.file_fields() == {"a.mp4": {"team": "blue"}, "c.mp4": {"team": "gold"}}


def _indexed(catalog: Catalog, names) -> None:
    for name in names:
        catalog.commit_file(FileRecord(name, 1, 1.0, f"h-{name}", 1.0, 25.0, 8, 8, 25, "pyav"),
                            [UnitRecord(0, 0.0, 1.0, (0.5,))], {"tiny": np.ones((1, 4), np.float32)})


def test_user_fields_are_capped_per_file_and_per_index_with_the_rest_counted(tmp_path):
    path = tmp_path / "meta.jsonl"
    wide = {"path": "a.mp4", **{f"f{i}": i for i in range(200_000)}}
    many = [{"path": f"clip{i}.mp4", f"name{i}": "x"} for i in range(300)]
    path.write_text("\n".join(json.dumps(row) for row in [wide, *many]) + "\n")
    with Catalog(tmp_path / "catalog.duckdb") as catalog:
        _indexed(catalog, ["a.mp4", *(f"clip{i}.mp4" for i in range(300))])
        notices: list[str] = []
        apply_metadata(catalog, path, notices)
        held = catalog.file_fields()
        assert len(held["a.mp4"]) == MAX_FIELDS_PER_FILE and held["a.mp4"]["f63"] == "63"
        assert len(catalog.field_kinds()) == MAX_FIELD_NAMES  # 64 of a.mp4, then the first 192 clips' names
        assert notices == ["meta.jsonl: 199,936 fields beyond the 64 a file holds: skipped",
                           "meta.jsonl: 108 fields of names beyond the 256 an index holds: skipped"]


def test_a_lone_surrogate_costs_its_field_alone(tmp_path):
    path = tmp_path / "meta.jsonl"
    path.write_text('{"path": "a.mp4", "team": "caf\\udce9", "rating": 4}\n{"path": "c.mp4", "team": "red"}\n'
                    '{"path": "b\\ud800.mp4", "team": "red"}\n')
    with Catalog(tmp_path / "catalog.duckdb") as catalog:
        _indexed(catalog, ["a.mp4", "c.mp4"])
        notices: list[str] = []
        assert apply_metadata(catalog, path, notices) == 2
        assert catalog.file_fields() == {"a.mp4": {"rating": "4"}, "c.mp4": {"team": "red"}}
        # the reader refuses the half-surrogate value as it reads the row; the path is shown escaped
        assert notices == ["meta.jsonl: 1 values that are not text, a number, true/false or a list of them: skipped "
                           "(e.g. a.mp4 team)",
                           "meta.jsonl: 1 rows name a path the index does not hold: skipped (e.g. b\\ud800.mp4)"]


def test_a_tag_past_a_cap_changes_nothing(tmp_path):
    with Catalog(tmp_path / "catalog.duckdb") as catalog:
        _indexed(catalog, ["a.mp4", "c.mp4"])
        catalog.tag(["a.mp4"], {f"k{i}": "1" for i in range(MAX_FIELDS_PER_FILE)}, [])
        with pytest.raises(FieldLimitError, match="a file holds at most 64 fields, and a.mp4 would hold more"):
            catalog.tag(["a.mp4", "c.mp4"], {"one_more": "1"}, [])
        catalog.tag(["a.mp4"], {"k0": "2"}, [])  # a field it has: no more of them
        with pytest.raises(FieldLimitError, match="a file holds at most 64"):
            catalog.tag(["c.mp4"], {f"n{i}": "1" for i in range(MAX_FIELDS_PER_FILE + 1)}, [])
        for start in range(MAX_FIELDS_PER_FILE, MAX_FIELD_NAMES, MAX_FIELDS_PER_FILE):
            catalog.tag([f"{start}.mp4"], {f"k{i}": "1" for i in range(start, start + MAX_FIELDS_PER_FILE)}, [])
        with pytest.raises(FieldLimitError, match="an index holds at most 256 field names"):
            catalog.tag(["c.mp4"], {"new_name": "1"}, [])
        assert catalog.file_fields()["a.mp4"]["k0"] == "2" and "c.mp4" not in catalog.file_fields()


def test_set_refuses_a_lone_surrogate():
    with pytest.raises(FieldError, match="not valid Unicode"):
        parse_assignments(["team=caf\udce9"], [])


def test_a_pipe_or_a_device_is_one_line_never_a_wait(tmp_path):
    os.mkfifo(tmp_path / "meta.csv")  # no writer: reading it would wait for ever
    (tmp_path / "meta.jsonl").symlink_to("/dev/zero")
    for name, says in (("meta.csv", "it is a pipe, not a file"), ("meta.jsonl", "it is a device, not a file")):
        with pytest.raises(metadata_file.MetadataFileError, match=f"{name}: {says}"):
            metadata_file.read(tmp_path / name, INDEXED)


def test_a_file_past_the_limit_is_refused_by_bytes_read(tmp_path, monkeypatch):
    monkeypatch.setattr(metadata_file, "METADATA_FILE_LIMIT", 32)
    (tmp_path / "meta.csv").write_text("path,team\n" + "a.mp4,red\n" * 4)
    with pytest.raises(metadata_file.MetadataFileError, match="larger than 32 bytes"):
        metadata_file.read(tmp_path / "meta.csv", INDEXED)


def test_a_huge_field_or_an_open_quote_costs_its_own_csv_line(tmp_path):
    path = tmp_path / "meta.csv"
    path.write_text("path,team\n" f"a.mp4,{'x' * 140_000}\n" 'sub/b.mp4,"red\n' "c.mp4,blue\n")
    read = metadata_file.read(path, INDEXED)
    assert read.rows == [("c.mp4", "team", "blue")]
    assert _lines(read) == ["meta: 2 rows that do not parse as CSV (a quote left open, a field too long): skipped "
                            "(e.g. line 2, line 3)"]


def test_a_deep_line_or_half_a_surrogate_pair_costs_its_own_row(tmp_path):
    path = tmp_path / "meta.jsonl"
    path.write_text("[" * 100_000 + "]" * 100_000 + "\n"
                    '{"path": "a.mp4", "team": "\\ud800"}\n'
                    '{"path": "\\udc00.mp4", "team": "red"}\n'
                    '{"path": "c.mp4", "team": "blue"}\n')
    read = metadata_file.read(path, INDEXED)
    assert read.rows == [("c.mp4", "team", "blue")]
    assert _lines(read) == [
        "meta: 1 rows nested more than 64 levels deep: skipped (e.g. line 1)",
        "meta: 1 values that are not text, a number, true/false or a list of them: skipped (e.g. a.mp4 team)",
        "meta: 1 rows name a path the index does not hold: skipped (e.g. \\udc00.mp4)",
    ]
