"""`convis remove`: files leave the index, not the disk; later runs skip them, `ls --removed` lists them, and
`--undo` puts their stored vectors back at once."""

import json
import os
from datetime import datetime

import pytest
from typer.testing import CliRunner

from retrieval.cli.app import app
from tests.indexes import copied_index

runner = CliRunner()


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


@pytest.fixture
def videos(three_clips_indexed, tmp_path):
    return copied_index(three_clips_indexed, tmp_path / "videos")


def listed(videos) -> set[str]:
    result = invoke("ls", videos, "--json")
    assert result.exit_code == 0, result.output
    return {f["path"] for f in json.loads(result.stdout)["files"]}


def index_json(videos) -> dict:
    result = invoke("index", videos, "--workers", 1, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_removed_files_stay_on_disk_and_out_of_later_runs(videos):
    result = invoke("remove", videos / "cup.mp4", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {"removed": ["cup.mp4"]}
    assert (videos / "cup.mp4").is_file()
    assert listed(videos) == {"campus_01.mp4", "campus_02.mp4"}
    report = index_json(videos)
    assert report["excluded"] == 1 and report["indexed"] == 0 and report["failed"] == []
    assert listed(videos) == {"campus_01.mp4", "campus_02.mp4"}


def test_the_summary_says_how_to_index_removed_files_again(videos):
    assert invoke("remove", "cup.mp4", "--index-dir", videos).exit_code == 0
    result = invoke("index", videos, "--workers", 1)
    assert result.exit_code == 0, result.output
    assert ("1 removed file skipped (convis ls --removed lists them; convis remove --undo FILE puts one back)"
            in " ".join(result.stdout.split()))


def test_undo_puts_the_file_back_at_once(videos):
    assert invoke("remove", videos / "cup.mp4").exit_code == 0
    result = invoke("remove", "--undo", videos / "cup.mp4", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {"restored": ["cup.mp4"], "to_index": []}
    assert "cup.mp4" in listed(videos)  # no index run between
    report = index_json(videos)
    assert report["excluded"] == 0 and report["indexed"] == 0 and report["unchanged"] == 3


def test_undo_says_the_file_is_searchable_now(videos):
    assert invoke("remove", "cup.mp4", "--index-dir", videos).exit_code == 0
    result = invoke("remove", "--undo", "cup.mp4", "--index-dir", videos)
    assert result.exit_code == 0, result.output
    assert "restored 1 file(s) with their stored vectors, searchable now: cup.mp4" in " ".join(result.stdout.split())


def test_ls_removed_lists_the_removed_files_with_when(videos):
    assert invoke("remove", videos / "cup.mp4").exit_code == 0
    result = invoke("ls", videos, "--removed", "--json")
    assert result.exit_code == 0, result.output
    (removed,) = json.loads(result.stdout)["removed"]
    assert (removed["path"], removed["kept"], removed["units"], removed["status"]) == ("cup.mp4", True, 1, "ok")
    assert datetime.fromisoformat(removed["removed_at"]).year >= 2024
    table = invoke("ls", videos, "--removed")
    assert table.exit_code == 0 and "cup.mp4" in table.stdout and removed["removed_at"][:10] in table.stdout
    assert "campus_01.mp4" not in table.stdout
    info = invoke("info", videos, "--json")
    assert json.loads(info.stdout)["files_removed"] == 1 and json.loads(info.stdout)["files_ok"] == 2
    assert invoke("remove", "--undo", videos / "cup.mp4").exit_code == 0
    assert json.loads(invoke("ls", videos, "--removed", "--json").stdout)["removed"] == []


def test_ls_failed_and_removed_together_is_a_usage_error(videos):
    result = invoke("ls", videos, "--removed", "--failed")
    assert result.exit_code == 2 and "--failed and --removed" in result.stderr


def test_a_path_the_index_does_not_list_is_a_usage_error_naming_it(videos):
    result = invoke("remove", "nope.mp4", "--index-dir", videos)
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "nope.mp4" in lines[0] and "Traceback" not in result.output
    assert "campus_01.mp4" in listed(videos)


def test_an_indexed_symlink_is_removed_as_itself_not_its_target(videos):
    (videos / "link.mp4").symlink_to("cup.mp4")
    assert index_json(videos)["indexed"] == 1
    assert "link.mp4" in listed(videos)
    result = invoke("remove", videos / "link.mp4", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {"removed": ["link.mp4"]}
    assert listed(videos) == {"campus_01.mp4", "campus_02.mp4", "cup.mp4"}
    undone = invoke("remove", "--undo", videos / "link.mp4", "--json")
    assert undone.exit_code == 0 and json.loads(undone.stdout) == {"restored": ["link.mp4"], "to_index": []}
    assert "link.mp4" in listed(videos)


def test_a_list_that_never_ends_or_never_opens_is_one_line_and_changes_nothing(videos, tmp_path):
    os.mkfifo(tmp_path / "pipe.txt")  # no writer: reading it would wait forever
    (tmp_path / "zero.txt").symlink_to("/dev/zero")
    for name, says in (("pipe.txt", "it is a pipe, not a file"), ("zero.txt", "it is a device, not a file")):
        result = invoke("remove", "--from-file", tmp_path / name, "--index-dir", videos)
        assert result.exit_code == 2 and result.stderr.strip().endswith(says), result.output
        assert len(result.stderr.strip().splitlines()) == 1
    assert "campus_01.mp4" in listed(videos)


def test_a_list_read_as_it_comes_is_capped_by_bytes_read(videos, tmp_path, monkeypatch):
    from retrieval.cli import drop_list

    monkeypatch.setattr(drop_list, "MOST_BYTES", 64)
    (tmp_path / "long.txt").write_text("campus_01.mp4\n" * 10)
    result = invoke("remove", "--from-file", tmp_path / "long.txt", "--index-dir", videos)
    assert result.exit_code == 2 and "is larger than 64 bytes" in result.stderr
    (tmp_path / "bad.txt").write_bytes(b"campus_01.mp4\ncaf\xe9.mp4\n")
    result = invoke("remove", "--from-file", tmp_path / "bad.txt", "--index-dir", videos)
    assert result.exit_code == 2 and "line 2 is not UTF-8" in result.stderr
    assert "campus_01.mp4" in listed(videos)


def test_many_unknown_paths_are_named_five_and_counted(videos, tmp_path):
    (tmp_path / "list.txt").write_text("".join(f"gone{i:05d}.mp4\n" for i in range(20_000)))
    result = invoke("remove", "--from-file", tmp_path / "list.txt", "--index-dir", videos)
    assert result.exit_code == 2
    assert result.stderr.strip() == ("error: not in the index: gone00000.mp4, gone00001.mp4, gone00002.mp4, "
                                     "gone00003.mp4, gone00004.mp4 and 19,995 more")
