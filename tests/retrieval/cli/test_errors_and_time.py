"""One-line errors with documented exit codes, -h and --version, and times typed as people type them."""

import json
import os
import socket
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from retrieval.cli.app import app
from tests.paths import ROOT

runner = CliRunner()


def one_line_error(result, code: int = 2) -> str:
    assert result.exit_code == code, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    return lines[0]


@pytest.mark.parametrize("args, says", [
    (["--nope"], "No such option: --nope"),
    (["-x"], "No such option: -x"),
    (["query"], "Missing option '--anchor'"),
    (["query", "-a", "x.mp4", "-c", "location", "-k", "zero"], "Invalid value for '-k'"),
    (["bench", "retrieval", "--bad"], "No such option: --bad"),
    (["frobnicate"], "No such command 'frobnicate'"),
])
def test_usage_errors_are_one_line_with_exit_code_2(args, says):
    assert says in one_line_error(runner.invoke(app, args))


def test_dash_h_is_help_and_version_prints():
    for args in (["-h"], ["query", "-h"], ["bench", "-h"]):
        result = runner.invoke(app, args)
        assert result.exit_code == 0 and result.stdout.startswith("Usage:"), args
    version = runner.invoke(app, ["--version"])
    assert version.exit_code == 0 and version.stdout.startswith("convis ")


def test_the_installed_entry_point_behaves_the_same():
    """`python cli.py` runs the same group: its usage errors are one line too."""
    bad = subprocess.run([sys.executable, str(ROOT / "cli.py"), "--nope"], capture_output=True, text=True, cwd=ROOT,
                         timeout=120)
    assert bad.returncode == 2
    assert bad.stderr.strip().splitlines() == ["error: No such option: --nope (see cli.py --help)"]


def test_a_busy_port_is_one_line(example_index):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        line = one_line_error(runner.invoke(app, ["serve", "--index-dir", str(example_index), "--port", str(port)]))
    assert f"cannot listen on 127.0.0.1:{port}" in line


@pytest.mark.parametrize("start, end", [("00:02", "0:06"), ("2", "6s"), ("0m2s", "0:00:06")])
def test_anchor_times_in_any_common_form_mean_the_same_window(example_index, example_videos, start, end):
    result = runner.invoke(app, ["query", "-a", str(example_videos / "campus_01.mp4"), "-c", "location", "--start",
                                 start, "--end", end, "--index-dir", str(example_index), "--json", "-k", "3"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert [h["path"] for h in data["hits"]][:1] == ["campus_02.mp4"]


def test_a_start_past_the_end_says_so_in_the_users_words(example_index, example_videos):
    line = one_line_error(runner.invoke(app, ["query", "-a", str(example_videos / "cup.mp4"), "-c", "location",
                                              "--start", "1m", "--index-dir", str(example_index)]))
    assert line == "error: --start 1m is past the end of cup.mp4 (8.1 s)"


def test_a_window_that_ends_before_it_starts_is_refused(example_index, example_videos):
    line = one_line_error(runner.invoke(app, ["query", "-a", str(example_videos / "cup.mp4"), "-c", "location",
                                              "--start", "5", "--end", "0:02", "--index-dir", str(example_index)]))
    assert "ends (0:02.0) before it starts (0:05.0)" in line


def test_a_time_that_is_not_one_names_the_option(example_index, example_videos):
    line = one_line_error(runner.invoke(app, ["query", "-a", str(example_videos / "cup.mp4"), "-c", "location",
                                              "--end", "soon", "--index-dir", str(example_index)]))
    assert line.startswith("error: --end: not a time: 'soon'")


def test_a_non_video_anchor_is_one_line_without_decoder_log_lines(example_index, tmp_path):
    """The decoder's native layer writes to the process's stderr itself; the user sees only convis's line."""
    fake = tmp_path / "notes.mp4"
    fake.write_text("not a video")
    done = subprocess.run([sys.executable, str(ROOT / "cli.py"), "query", "-a", str(fake), "-c", "location",
                           "--index-dir", str(example_index)], capture_output=True, text=True, cwd=ROOT, timeout=300,
                          env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: anchor {fake} is not a readable video"), done.stderr


def test_html_on_a_folder_is_refused_before_any_work(example_index, example_videos, tmp_path):
    line = one_line_error(runner.invoke(app, ["query", "-a", str(example_videos / "cup.mp4"), "-c", "location",
                                              "--index-dir", str(example_index), "--html", str(tmp_path)]))
    assert f"--html {tmp_path} is a folder" in line


def test_an_index_dir_that_is_a_file_is_one_line(example_videos, tmp_path):
    not_a_folder = tmp_path / "idx"
    not_a_folder.write_text("")
    result = runner.invoke(app, ["index", str(example_videos), "--index-dir", str(not_a_folder)])
    assert result.exit_code in (1, 2)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and str(not_a_folder) in lines[0], result.stderr
