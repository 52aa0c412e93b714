"""``--where FIELD OP VALUE`` over the catalog: built-in and user fields, each operator, values bound as parameters
(SQL in a value is matched literally), and one line naming the known fields for an unknown one."""

import numpy as np
import pytest

from retrieval.search.filters import allowed_units, fields
from retrieval.search.filters import notices as filter_notices
from retrieval.store.catalog import Catalog
from retrieval.store.catalog.records import FileRecord, UnitRecord
from retrieval.store.where import MAX_CONDITION_CHARS, FilterError, Reader, parse, split

HOSTILE = ["x'; DROP TABLE files; --.mp4", 'say "hi"; --.mp4', "a' OR '1'='1.mp4", "semi;colon.mp4"]


def _add(catalog: Catalog, path: str, duration: float, codec: str = "h264", units: int = 1) -> None:
    record = FileRecord(path, int(duration * 1000), 1_700_000_000.0, f"hash-{path}", duration, 25.0, 640, 360,
                        int(duration * 25), "pyav", codec=codec)
    step = duration / units
    catalog.commit_file(record, [UnitRecord(i, i * step, (i + 1) * step, (i * step,)) for i in range(units)],
                        {"tiny": np.ones((units, 4), np.float32)})


@pytest.fixture
def catalog(tmp_path):
    with Catalog(tmp_path / "catalog.duckdb") as catalog:
        _add(catalog, "sports/match.mp4", 30.0, units=3)
        _add(catalog, "sports/old/final.mp4", 5.0, codec="hevc")
        _add(catalog, "home/cat.mp4", 12.0, codec="vp9")
        for name in HOSTILE:
            _add(catalog, name, 1.0)
        yield catalog


def _paths(catalog: Catalog, *where: str) -> set[str]:
    ids = allowed_units(catalog, where)
    return {unit.path for unit in catalog.units(ids.tolist()).values()}


@pytest.mark.parametrize("where, expected", [
    (["duration > 10"], {"sports/match.mp4", "home/cat.mp4"}),
    (["duration>=30"], {"sports/match.mp4"}),
    (["folder = sports"], {"sports/match.mp4"}),
    (["folder glob 'sports*'"], {"sports/match.mp4", "sports/old/final.mp4"}),
    (["path glob 'sports/*.mp4'"], {"sports/match.mp4", "sports/old/final.mp4"}),  # * crosses folders, as GLOB does
    (["name = cat.mp4"], {"home/cat.mp4"}),
    (["codec in hevc, vp9"], {"sports/old/final.mp4", "home/cat.mp4"}),
    (["codec != h264", "duration < 10"], {"sports/old/final.mp4"}),
    (["mtime < 2024-01-01"], {"sports/match.mp4", "sports/old/final.mp4", "home/cat.mp4", *HOSTILE}),
])
def test_built_in_fields_keep_the_files_that_match(catalog, where, expected):
    assert _paths(catalog, *where) == expected


def test_unit_fields_keep_units_not_whole_files(catalog):
    ids = allowed_units(catalog, ["start >= 10", "name = match.mp4"])
    assert sorted(u.segment for u in catalog.units(ids.tolist()).values()) == [1, 2]


@pytest.mark.parametrize("name", HOSTILE)
def test_sql_in_a_value_is_matched_literally(catalog, name):
    assert _paths(catalog, f"name = {name}") == {name}
    assert _paths(catalog, f'path in {name}') == ({name} if "," not in name else set())
    assert len(catalog.file_states()) == 3 + len(HOSTILE)  # nothing was dropped


@pytest.mark.parametrize("value", ["x' OR '1'='1", "1; DROP TABLE units; --", "\" OR 1=1 --", "'; --"])
def test_injection_shaped_values_match_nothing_and_change_nothing(catalog, value):
    catalog.tag(["home/cat.mp4"], {"team": "red", "tags": "goal"}, [])
    for where in (f"name = {value}", f"team = {value}", f"tags has {value}", f"path glob {value}"):
        assert _paths(catalog, where) == set(), where
    assert catalog.summary()["units"] == 5 + len(HOSTILE)
    assert catalog.file_fields() == {"home/cat.mp4": {"tags": "goal", "team": "red"}}


def test_user_fields_compare_as_numbers_or_text_and_tags_by_item(catalog):
    catalog.tag(["sports/match.mp4", "home/cat.mp4"], {"rating": "4", "tags": "goal, corner"}, [])
    catalog.tag(["home/cat.mp4"], {"rating": "10"}, [])
    assert fields(catalog)["rating"] == "number" and fields(catalog)["tags"] == "text"
    assert _paths(catalog, "rating > 5") == {"home/cat.mp4"}  # 10 > 5 as numbers ("10" < "5" as text)
    assert _paths(catalog, "tags has corner") == {"sports/match.mp4", "home/cat.mp4"}
    assert _paths(catalog, "tags has corn") == set()
    catalog.tag(["home/cat.mp4"], {}, ["tags"])
    assert _paths(catalog, "tags has goal") == {"sports/match.mp4"}


def test_a_tag_changes_no_vector_generation(catalog):
    before = catalog.generation
    catalog.tag(["home/cat.mp4"], {"team": "red"}, [])
    assert catalog.generation == before  # the saved FAISS indices stay current


def test_an_unknown_field_is_one_line_naming_the_fields(catalog):
    catalog.tag(["home/cat.mp4"], {"team": "red"}, [])
    with pytest.raises(FilterError) as raised:
        allowed_units(catalog, ["colour = red"])
    assert str(raised.value) == ("--where: unknown field 'colour'; fields here: path, folder, name, duration, size, "
                                 "mtime, width, height, fps, codec, start, end, team")


@pytest.mark.parametrize("where, says", [
    ("duration > long", "duration is a number and 'long' is not one"),
    ("width in 640,wide", "width is a number and 'wide' is not one"),
    ("mtime > yesterday", "mtime takes seconds since 1970 or a date"),
    ("duration", "is not FIELD OP VALUE"),
    ("duration ~ 3", "is not FIELD OP VALUE"),
    ("name =", "gives no value after ="),
])
def test_a_bad_condition_is_one_clear_line(catalog, where, says):
    with pytest.raises(FilterError, match=says.replace("(", r"\(")):
        allowed_units(catalog, [where])


def test_parse_reads_operators_with_or_without_spaces_and_strips_quotes():
    assert (parse("duration>=10").op, parse("duration>=10").value) == (">=", "10")
    assert parse("path GLOB 'a b/*.mp4'").value == "a b/*.mp4" and parse("path GLOB x").op == "glob"
    assert parse("team == red").op == "=" and parse("note = \"it's\"").value == "it's"


@pytest.mark.parametrize("where, field", [("duration glob 1*", "duration"), ("width has 320", "width"),
                                          ("mtime glob 2024*", "mtime"), ("START has 1", "start")])
def test_glob_and_has_on_a_built_in_number_field_is_one_line_before_any_sql(catalog, where, field):
    with pytest.raises(FilterError) as raised:
        parse(where)
    assert str(raised.value) == (f"--where {where}: {field} is a number field; it takes = != < <= > >= in "
                                 "(glob and has read text)")
    with pytest.raises(FilterError, match="is a number field"):
        allowed_units(catalog, [where])


def test_text_fields_keep_glob_and_has(catalog):
    catalog.tag(["home/cat.mp4"], {"rating": "4"}, [])
    assert _paths(catalog, "codec glob 'h26*'", "name has match.mp4") == {"sports/match.mp4"}
    assert _paths(catalog, "rating glob '4*'") == {"home/cat.mp4"}  # a user number field keeps its text


def test_a_field_of_numbers_and_text_compares_numbers_where_they_parse(catalog):
    catalog.tag(["home/cat.mp4"], {"rating": "10"}, [])
    catalog.tag(["sports/match.mp4"], {"rating": "nan"}, [])
    assert fields(catalog)["rating"] == "mixed"
    assert _paths(catalog, "rating >= 4") == {"home/cat.mp4"}  # as text, "nan" >= "4" and "10" < "4"
    assert _paths(catalog, "rating = 10.0") == {"home/cat.mp4"}
    assert _paths(catalog, "rating = nan") == {"sports/match.mp4"}
    assert _paths(catalog, "rating != 10") == {"sports/match.mp4"}
    assert _paths(catalog, "rating in 10, nan") == {"home/cat.mp4", "sports/match.mp4"}
    assert filter_notices(catalog, ["rating >= 4", "rating < 100"]) == [
        "rating: 1 of 2 files holds a value that is not a number; compared as numbers where they parse"]
    assert filter_notices(catalog, ["rating = nan", "duration > 1"]) == []  # no number compared


def test_an_overlong_condition_is_refused_before_it_is_read():
    text = "name = a" + " " * 50_000 + "b"
    with pytest.raises(FilterError) as raised:
        parse(text)
    assert str(raised.value) == f"--where is {len(text):,} characters; at most {MAX_CONDITION_CHARS:,}"


@pytest.mark.parametrize("make", [
    lambda n: "name = a" + " " * n + "b",  # spaces inside a value: quadratic for the old regular expression
    lambda n: "a" * n,
    lambda n: "name" + " " * n + "in" + " " * n + "x",
    lambda n: "name =" + " x" * (n // 2),
    lambda n: " " * n,
])
def test_reading_a_condition_looks_at_each_character_a_bounded_number_of_times(make):
    for n in (100, MAX_CONDITION_CHARS // 3):
        text = make(n)
        reader = Reader(text)
        split(reader)
        assert reader.looked <= len(text) + 8, (n, reader.looked)


def test_a_lone_surrogate_in_a_value_is_one_line():
    with pytest.raises(FilterError, match="not valid Unicode"):
        parse("name = caf\udce9")
