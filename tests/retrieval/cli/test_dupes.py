"""`convis dupes` on copies the tests make from the example clips (tests/near_copies.py): a quarter of the bitrate,
half the size, a 10% crop, 1 s trimmed at each end, a 5% logo, among distinct takes of one square; file pairs
found with --auto against the known ones, the keep/drop list, and `convis remove --from-file` taking it."""

import json

import pytest
from typer.testing import CliRunner

from retrieval.cli.app import app
from tests.indexes import copied_index
from tests.near_copies import DISTINCT, pairs_of

runner = CliRunner()


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


@pytest.fixture(scope="module")
def copies(near_copies):
    return near_copies


def dupes_json(folder, *args) -> dict:
    result = invoke("dupes", folder, "--json", *args)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_auto_finds_the_copies_and_leaves_the_other_takes_of_the_square(copies):
    folder, truth = copies
    found = dupes_json(folder, "--auto")
    assert found["threshold_by"] == "auto" and 0.5 < found["threshold"] < 1
    pairs = pairs_of([[m["path"] for m in g["members"]] for g in found["groups"]])
    precision = len(pairs & truth) / max(len(pairs), 1)
    recall = len(pairs & truth) / len(truth)
    assert precision >= 0.95 and recall >= 0.95, (sorted(map(sorted, pairs)), found["threshold"])
    grouped = {m["path"] for g in found["groups"] for m in g["members"]}
    assert not grouped & set(DISTINCT)


def test_the_text_says_which_threshold_auto_chose(copies):
    result = invoke("dupes", copies[0])
    assert result.exit_code == 0, result.output
    assert "chosen by --auto from the index's background" in " ".join(result.stdout.split())


def test_each_group_keeps_one_and_drops_the_rest(copies):
    found = dupes_json(copies[0], "--keep", "resolution")
    for group in found["groups"]:
        assert sum(m["keep"] for m in group["members"]) == 1
    kept = {m["path"] for g in found["groups"] for m in g["members"] if m["keep"]}
    assert "cup.mp4" in kept and "cup_half_scale.mp4" in found["drop"]  # the half-size copy has fewer pixels
    longest = dupes_json(copies[0], "--keep", "longest")
    assert "bigbuckbunny_trimmed.mp4" in longest["drop"]
    trimmed = next(m for g in longest["groups"] for m in g["members"] if m["path"] == "bigbuckbunny_trimmed.mp4")
    assert trimmed["end"] - trimmed["start"] == pytest.approx(3, abs=0.2)


def test_where_limits_the_files_compared(copies):
    found = dupes_json(copies[0], "--where", "name glob 'cup*'")
    assert [sorted(m["path"] for m in g["members"]) for g in found["groups"]] == [["cup.mp4", "cup_half_scale.mp4"]]


def test_unit_level_lists_units(copies):
    found = dupes_json(copies[0], "--level", "unit")
    assert found["level"] == "unit" and found["groups"]
    assert all("@" in item for item in found["drop"])


def test_remove_takes_the_drop_list(copies, tmp_path):
    folder = copied_index(copies[0], tmp_path / "videos")
    listing = tmp_path / "dupes.json"
    listing.write_text(json.dumps(dupes_json(folder)))
    result = invoke("remove", "--index-dir", folder, "--from-file", listing, "--json")
    assert result.exit_code == 0, result.output
    assert set(json.loads(result.stdout)["removed"]) == set(json.loads(listing.read_text())["drop"])
    assert dupes_json(folder)["groups"] == []
    lines = tmp_path / "drop.txt"
    lines.write_text("# kept aside\n\ncampus_02.mp4\n")
    result = invoke("remove", "--index-dir", folder, "--from-file", lines, "--json")
    assert result.exit_code == 0 and json.loads(result.stdout)["removed"] == ["campus_02.mp4"], result.output


@pytest.mark.parametrize("args, said", [
    (["--threshold", "2"], "--threshold is a similarity"),
    (["--threshold", "0.9", "--auto"], "use one of them"),
    (["--level", "scene"], "--level is one of"),
    (["--keep", "newest"], "--keep is one of"),
    (["--indexer", "nope"], "not a visual indexer"),
    (["--where", "colour = red"], "unknown field"),
])
def test_bad_options_are_one_line_and_exit_2(copies, args, said):
    result = invoke("dupes", copies[0], *args)
    assert result.exit_code == 2 and said in result.output and "Traceback" not in result.output, result.output


def test_a_unit_level_list_or_no_list_is_refused_by_remove(copies, tmp_path):
    listing = tmp_path / "units.json"
    listing.write_text(json.dumps(dupes_json(copies[0], "--level", "unit")))
    for args in (["--from-file", listing], ["--from-file", tmp_path / "missing.txt"], []):
        result = invoke("remove", "--index-dir", copies[0], *args)
        assert result.exit_code == 2 and "Traceback" not in result.output, result.output


def test_html_shows_each_group_side_by_side_with_frames(copies, tmp_path):
    page = tmp_path / "dupes.html"
    result = invoke("dupes", copies[0], "--where", "name glob 'cup*'", "--html", page)
    assert result.exit_code == 0, result.output
    text = page.read_text()
    assert text.count("<h2>group") == 1 and "cup_half_scale.mp4" in text
    assert text.count("data:image/jpeg;base64,") == 8  # four frames for each of the two members
