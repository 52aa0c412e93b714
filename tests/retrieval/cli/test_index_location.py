"""Finding the index from what a user types (the video folder, the index folder, nothing), and listing it."""

import json
import shutil

import pytest
from typer.testing import CliRunner

from retrieval.api import Engine
from retrieval.cli.app import app
from retrieval.pipeline.settings import IndexSettings

runner = CliRunner()


@pytest.fixture(scope="module")
def indexed(tmp_path_factory, example_videos):
    """A working folder holding `videos/` (three clips and an empty file) indexed into videos/.convis."""
    work = tmp_path_factory.mktemp("work")
    videos = work / "videos"
    videos.mkdir()
    for name in ("cup.mp4", "campus_01.mp4", "campus_02.mp4"):
        shutil.copy(example_videos / name, videos / name)
    (videos / "[draft] empty.mp4").write_bytes(b"")
    Engine(videos / ".convis").index(videos, ["efficientnet-lite0"], IndexSettings(workers=1))
    return work


def info_json(*args, cwd=None, monkeypatch=None):
    if cwd is not None:
        monkeypatch.chdir(cwd)
    result = runner.invoke(app, ["info", *map(str, args), "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.mark.parametrize("where", ["videos", "videos/.convis"])
def test_info_takes_the_video_folder_or_the_index_folder(indexed, where, monkeypatch):
    expected = str(indexed / "videos" / ".convis")
    assert info_json(indexed / where)["index_dir"] == expected
    assert info_json("--index-dir", indexed / where)["index_dir"] == expected


def test_info_inside_the_video_folder_finds_its_index(indexed, monkeypatch):
    assert info_json(cwd=indexed / "videos", monkeypatch=monkeypatch)["files_ok"] == 3


def test_info_from_the_parent_folder_names_the_index_below(indexed, monkeypatch):
    monkeypatch.chdir(indexed)
    result = runner.invoke(app, ["info"])
    assert result.exit_code == 2
    assert f"found {indexed / 'videos'}: pass one of them" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_query_index_dir_may_be_the_video_folder(indexed):
    result = runner.invoke(app, ["query", "-a", str(indexed / "videos" / "campus_01.mp4"), "-c", "location",
                                 "--index-dir", str(indexed / "videos"), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["hits"][0]["path"] == "campus_02.mp4"


def test_ls_lists_every_file_with_units_status_and_reason(indexed):
    result = runner.invoke(app, ["ls", str(indexed / "videos"), "--json"])
    assert result.exit_code == 0, result.output
    listing = json.loads(result.stdout)
    assert listing["root"] == str(indexed / "videos")
    files = {f["path"]: f for f in listing["files"]}
    assert set(files) == {"cup.mp4", "campus_01.mp4", "campus_02.mp4", "[draft] empty.mp4"}
    cup = files["cup.mp4"]
    assert (cup["status"], len(cup["units"]), cup["captioned"]) == ("ok", 1, False)
    assert cup["duration"] == pytest.approx(8.1, abs=0.05) and cup["units"][0]["end"] == pytest.approx(cup["duration"])
    broken = files["[draft] empty.mp4"]
    assert broken["status"] == "failed" and broken["error"] and broken["units"] == []


def test_ls_table_shows_names_as_written_and_failed_only_on_request(indexed):
    everything = runner.invoke(app, ["ls", str(indexed / "videos")], env={"COLUMNS": "200"})
    assert "[draft] empty.mp4" in everything.stdout  # not eaten as markup
    assert "0:08.1" in everything.stdout  # cup's duration, in the one time format
    failed = runner.invoke(app, ["ls", str(indexed / "videos"), "--failed", "--json"])
    assert [f["path"] for f in json.loads(failed.stdout)["files"]] == ["[draft] empty.mp4"]


def test_an_index_made_elsewhere_is_found_from_the_folder_it_indexed(tmp_path, example_videos, monkeypatch):
    videos, elsewhere = tmp_path / "videos", tmp_path / "out" / "demo-index"
    videos.mkdir()
    shutil.copy(example_videos / "cup.mp4", videos / "cup.mp4")
    made = runner.invoke(app, ["index", str(videos), "--index-dir", str(elsewhere), "-i", "efficientnet-lite0"])
    assert made.exit_code == 0, made.output
    assert (videos / ".convis-index").read_text().strip() == str(elsewhere.resolve())
    assert info_json(videos)["index_dir"] == str(elsewhere.resolve())
    assert info_json(cwd=videos, monkeypatch=monkeypatch)["index_dir"] == str(elsewhere.resolve())
    query = runner.invoke(app, ["query", "-a", "cup.mp4", "-c", "location", "--json"])
    assert query.exit_code == 0, query.output  # the lonely clip has no other to return, but the index is found
    assert json.loads(query.stdout)["root"] == str(videos.resolve())


def test_a_folder_that_cannot_hold_the_pointer_gets_a_note_and_the_index_is_made(tmp_path, example_videos,
                                                                                  monkeypatch):
    videos = tmp_path / "videos"
    videos.mkdir()
    shutil.copy(example_videos / "cup.mp4", videos / "cup.mp4")
    real_write = type(videos).write_text

    def read_only(path, *args, **kwargs):
        if path.name == ".convis-index":
            raise PermissionError(13, "Permission denied", str(path))
        return real_write(path, *args, **kwargs)

    monkeypatch.setattr(type(videos), "write_text", read_only)
    made = runner.invoke(app, ["index", str(videos), "--index-dir", str(tmp_path / "idx"), "-i",
                               "efficientnet-lite0"])
    assert made.exit_code == 0, made.output
    assert "could not write" in made.stderr and f"--index-dir {(tmp_path / 'idx').resolve()}" in made.stderr
    assert (tmp_path / "idx" / "catalog.duckdb").is_file() and not (videos / ".convis-index").exists()


def test_info_lists_the_description_signals(demo_index):
    data = info_json(demo_index)
    described = {row["concept"]: row for row in data["descriptions"]}
    assert set(described) == {"caption", "location", "main-action", "main-subjects", "main-objects", "order-of-actions"}
    assert described["location"]["described_by"] == {"file": 9}
    assert [s.split("#")[-1] for s in described["location"]["signals"]] == ["location"]
    text = runner.invoke(app, ["info", str(demo_index)], env={"COLUMNS": "200"}).stdout
    assert "location descriptions: 9 unit(s) by text files -> text#location" in text
    assert "main-action descriptions: 9 unit(s) by text files -> text#main-action" in text


def test_a_copied_index_says_it_was_written_elsewhere_and_which_folder_it_covers(indexed, tmp_path):
    copy = tmp_path / "elsewhere" / ".convis"
    shutil.copytree(indexed / "videos" / ".convis", copy)
    original = runner.invoke(app, ["info", str(indexed / "videos"), "--json"])
    assert original.exit_code == 0 and "written in" not in original.stderr
    result = runner.invoke(app, ["info", "--index-dir", str(copy), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["root"] == str(indexed / "videos")
    said = [line for line in result.stderr.splitlines() if "written in" in line]
    assert said and str(indexed / "videos" / ".convis") in said[0] and str(copy) in said[0]
    assert f"covers {indexed / 'videos'}" in said[0] and "--move-root" in said[0]
