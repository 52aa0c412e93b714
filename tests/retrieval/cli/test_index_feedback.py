"""What `convis index` tells its user: plain reasons, names as written, counts that agree with `info`, notes
before the progress bar, a warning for a folder without videos, and the whole command's time."""

import json
import os
import re
import shutil
import subprocess
import sys
import time

import pytest

from retrieval.store.catalog import Catalog
from tests.paths import ROOT


def convis(*args, cwd=None) -> subprocess.CompletedProcess:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "COLUMNS": "200"}
    return subprocess.run([sys.executable, str(ROOT / "cli.py"), *map(str, args)], capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=300)


@pytest.fixture
def folder(tmp_path, example_videos):
    """Two real clips, an empty file and a cut-off copy whose name looks like rich markup."""
    videos = tmp_path / "videos"
    videos.mkdir()
    for name in ("cup.mp4", "carphone_pristine.mp4"):
        shutil.copy(example_videos / name, videos / name)
    shutil.copy(example_videos / "cup.mp4", videos / "zz[bold].mp4")  # the last file: the bar's final name
    (videos / "empty.mp4").write_bytes(b"")
    (videos / "[bold]cup2.mp4").write_bytes((example_videos / "cup.mp4").read_bytes()[:3000])
    return videos


@pytest.mark.slow
def test_reasons_are_plain_names_are_shown_as_written_and_counts_agree_with_info(folder):
    first = convis("index", folder, "-i", "efficientnet-lite0", "--workers", "1")
    assert first.returncode == 0, first.stderr
    assert re.search(r"\[bold\]cup2\.mp4 +│ not a complete video file \(truncated\)", first.stdout)
    assert re.search(r"empty\.mp4 +│ empty file \(0 bytes\)", first.stdout)
    assert "zz[bold].mp4" in first.stderr  # the progress bar's current file
    assert "failed 2\n" in first.stdout and "moov" not in first.stdout

    again = convis("index", folder, "--workers", "1")
    assert again.returncode == 0, again.stderr
    assert ("unchanged 3; forgotten 0; failed 2 (2 unchanged since an earlier run, not retried: --retry-failed)"
            in again.stdout)
    assert "[bold]cup2.mp4" in again.stdout
    info = json.loads(convis("info", "--index-dir", folder / ".convis", "--json").stdout)
    assert info["files_failed"] == 2 and info["files_ok"] == 3


def test_the_default_indexer_note_comes_before_the_progress_bar(folder):
    result = convis("index", folder, "--workers", "1")  # offline, no dinov2 weights: the fallback
    assert result.returncode == 0, result.stderr
    note = result.stderr.index("note: dinov2 weights")
    assert note < result.stderr.index("indexing") and result.stderr.count("note: dinov2") == 1


def test_a_folder_without_videos_warns_records_nothing_and_leaves_the_choice_free(tmp_path, example_videos):
    videos = tmp_path / "videos"
    videos.mkdir()
    (videos / "notes.txt").write_text("no videos here")
    result = convis("index", videos)
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.strip() == (f"warning: no video files in {videos} (.mp4, .mov, .mkv, .webm, .avi and "
                                     "other video extensions); nothing was indexed or recorded")
    assert not (videos / ".convis").exists()

    shutil.copy(example_videos / "cup.mp4", videos / "cup.mp4")
    chosen = convis("index", videos, "-i", "efficientnet-lite0", "--segment", "10s", "--workers", "1")
    assert chosen.returncode == 0, chosen.stderr
    assert "note:" not in chosen.stderr  # no default was chosen, and nothing asks to change one


def test_an_existing_index_is_left_as_it_was_when_its_folder_is_empty(tmp_path, example_videos):
    videos = tmp_path / "videos"
    videos.mkdir()
    shutil.copy(example_videos / "cup.mp4", videos / "cup.mp4")
    assert convis("index", videos, "-i", "efficientnet-lite0", "--workers", "1").returncode == 0
    (videos / "cup.mp4").unlink()  # e.g. a drive that is not mounted
    result = convis("index", videos)
    assert result.returncode == 1 and "warning: no video files" in result.stderr
    with Catalog(videos / ".convis" / "catalog.duckdb", read_only=True) as catalog:
        assert list(catalog.file_states()) == ["cup.mp4"]  # not forgotten


@pytest.mark.slow
def test_segment_on_an_existing_index_recuts_it(tmp_path, example_videos):
    videos = tmp_path / "videos"
    videos.mkdir()
    for name in ("campus_01.mp4", "cup.mp4"):  # 20 s and 8 s
        shutil.copy(example_videos / name, videos / name)
    assert convis("index", videos, "-i", "efficientnet-lite0", "--workers", "1").returncode == 0
    result = convis("index", videos, "--segment", "10s", "--workers", "1")
    assert result.returncode == 0, result.stderr
    assert "note: 1 indexed file(s) get 10 s units" in result.stderr
    assert "indexed 1 file(s), 2 unit(s)" in result.stdout
    info = json.loads(convis("info", "--index-dir", videos / ".convis", "--json").stdout)
    assert info["units"] == 3


def test_a_rerun_with_nothing_to_do_reports_the_whole_commands_time(folder):
    assert convis("index", folder, "-i", "efficientnet-lite0", "--workers", "1").returncode == 0
    started = time.monotonic()
    result = convis("index", folder, "-i", "efficientnet-lite0", "--workers", "1", "--json")
    wall = time.monotonic() - started
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["indexed"] == 0 and report["unchanged"] == 3
    assert 0.6 * wall <= report["seconds"] <= wall  # start-up and scan included, not just an empty embed phase


def test_piped_the_report_starts_on_a_line_of_its_own_after_the_bar(tmp_path, example_videos):
    videos = tmp_path / "videos"
    videos.mkdir()
    shutil.copy(example_videos / "cup.mp4", videos / "cup.mp4")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "COLUMNS": "80"}
    piped = subprocess.run([sys.executable, str(ROOT / "cli.py"), "index", str(videos), "-i", "efficientnet-lite0",
                            "--workers", "1"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                           timeout=300)  # both streams into one pipe, as `convis index ... 2>&1 | tee log` has them
    assert piped.returncode == 0, piped.stdout
    lines = piped.stdout.splitlines()
    bar = [line for line in lines if line.startswith("indexing")]
    assert len(bar) == 1 and bar[0].rstrip().endswith("cup.mp4")  # the bar's last state, alone on its line
    assert any(line.startswith("indexed 1 file(s)") for line in lines), piped.stdout
