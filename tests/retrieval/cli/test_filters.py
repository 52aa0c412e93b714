"""`--where` on `convis query` and `convis search`, `convis tag`, `convis index --metadata` and the fields
`convis ls --json` shows: a filter keeps exactly the files that match, before ranking; bad input is one line."""

import json

import pytest
from typer.testing import CliRunner

from retrieval.cli.app import app
from tests.indexes import copied_index

runner = CliRunner()
CUP = "a hand holding a cup"


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


@pytest.fixture
def videos(three_clips_indexed, tmp_path):
    return copied_index(three_clips_indexed, tmp_path / "videos")


def hits(result) -> list[str]:
    assert result.exit_code == 0, result.output
    return [h["path"] for h in json.loads(result.stdout)["hits"]]


def query(videos, *where, anchor="cup.mp4"):
    args = [f for w in where for f in ("--where", w)]
    return invoke("query", "-a", videos / anchor, "-c", "main-objects", "--index-dir", videos, "-k", 5, "--json", *args)


def test_tagged_fields_filter_a_query_and_show_in_ls(videos):
    assert set(hits(query(videos))) == {"campus_01.mp4", "campus_02.mp4"}
    result = invoke("tag", videos / "campus_02.mp4", "--set", "tags=goal,corner", "--set", "rating=4")
    assert result.exit_code == 0, result.output
    assert hits(query(videos, "tags has goal")) == ["campus_02.mp4"]
    assert hits(query(videos, "rating >= 4", "name glob 'campus_*'")) == ["campus_02.mp4"]
    assert hits(query(videos, "rating < 4")) == []
    listed = {f["path"]: f for f in json.loads(invoke("ls", videos, "--json").stdout)["files"]}
    assert listed["campus_02.mp4"]["fields"] == {"rating": "4", "tags": "goal,corner"}
    assert listed["cup.mp4"]["fields"] == {} and listed["cup.mp4"]["codec"] == "h264"
    invoke("tag", videos / "campus_02.mp4", "--unset", "tags")
    assert json.loads(invoke("ls", videos, "--json").stdout)["files"][1]["fields"] == {"rating": "4"}


def test_a_filter_that_keeps_nothing_says_so(videos):
    result = query(videos, "duration > 1000")
    assert json.loads(result.stdout)["hits"] == []
    assert "no indexed unit matches 'duration > 1000'" in json.loads(result.stdout)["empty_reason"]


@pytest.mark.parametrize("where, says", [
    ("colour = red", "error: --where: unknown field 'colour'; fields here: path, folder, name, duration"),
    ("duration > long", "error: --where duration > long: duration is a number and 'long' is not one"),
    ("duration", "error: --where 'duration' is not FIELD OP VALUE"),
    ("duration glob 1*", "error: --where duration glob 1*: duration is a number field; it takes = != < <= > >= in"),
    ("width has 320", "error: --where width has 320: width is a number field"),
    ("name = a" + " " * 50_000 + "b", "error: --where is 50,009 characters; at most 1,100"),
])
def test_a_bad_filter_is_one_line_and_exit_2(videos, where, says):
    result = query(videos, where)
    assert result.exit_code == 2 and not result.stdout
    [line] = result.stderr.strip().splitlines()
    assert line.startswith(says)


def test_search_filters_before_ranking_and_reads_sql_literally(demo_index):
    found = invoke("search", CUP, "--index-dir", demo_index, "-k", 5, "--json", "--where", "name in box.mp4,bikes.mp4")
    assert set(hits(found)) == {"box.mp4", "bikes.mp4"}  # cup.mp4 ranks first unfiltered: it is filtered out first
    for value in ("x'; DROP TABLE files; --", "\" OR 1=1 --", "cup.mp4' OR '1'='1"):
        result = invoke("search", CUP, "--index-dir", demo_index, "--json", "--where", f"name = {value}")
        assert json.loads(result.stdout)["hits"] == [], value
    assert hits(invoke("search", CUP, "--index-dir", demo_index, "-k", 1, "--json")) == ["cup.mp4"]


def test_tag_refuses_unknown_files_and_built_in_fields(videos):
    result = invoke("tag", videos / "nope.mp4", "--set", "team=red", "--index-dir", videos)
    assert result.exit_code == 2 and "not in the index: nope.mp4" in result.stderr
    result = invoke("tag", videos / "cup.mp4", "--set", "duration=3")
    assert result.exit_code == 2 and "duration is a built-in field" in result.stderr
    result = invoke("tag", videos / "cup.mp4", "--set", "team")
    assert result.exit_code == 2 and "give KEY=VALUE" in result.stderr


def test_index_reads_a_metadata_file_and_says_each_problem_once(videos, tmp_path):
    meta = tmp_path / "meta.csv"
    meta.write_bytes(b"path,team\ncup.mp4,red\ncampus_01.mp4,\xff\nnot-here.mp4,blue\nelse.mp4,blue\n")
    result = invoke("index", videos, "--workers", 1, "--metadata", meta)
    assert result.exit_code == 0, result.output
    said = " ".join(result.output.split())
    assert "meta.csv: 2 rows name a path the index does not hold: skipped" in said
    assert "meta.csv: 1 rows not in UTF-8: skipped (e.g. line 3)" in said
    assert "metadata: 1 file(s) have fields from meta.csv" in said
    assert hits(query(videos, "team = red", anchor="campus_01.mp4")) == ["cup.mp4"]
    missing = invoke("index", videos, "--metadata", tmp_path / "gone.csv")
    assert missing.exit_code == 2 and "metadata file not found" in missing.stderr


def test_a_field_of_numbers_and_text_compares_numbers_and_says_so(videos):
    invoke("tag", videos / "campus_02.mp4", "--set", "rating=10")
    invoke("tag", videos / "campus_01.mp4", "--set", "rating=nan")
    result = query(videos, "rating >= 4")
    assert hits(result) == ["campus_02.mp4"]  # as text, "nan" >= "4" and "10" < "4"
    assert "rating: 1 of 2 files holds a value that is not a number; compared as numbers where they parse" in \
        json.loads(result.stdout)["notices"]
