"""Careless or hostile input on the command line: endless and deeply nested files, absurd numbers, names that
would steer the terminal. Each is one line and a non-zero exit, said before any model loads."""

import shutil
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from retrieval.cli.app import app
from tests.paths import ROOT

runner = CliRunner()

# the command line under a 1 GiB address-space limit: an unbounded read ends in MemoryError and a traceback
BOUNDED = """
import resource, sys
resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
from retrieval.cli.app import app
sys.argv = ["convis", *sys.argv[1:]]
app()
"""


def one_line_error(result, code: int = 2) -> str:
    assert result.exit_code == code, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    return lines[0]


def test_diff_statements_from_an_endless_device_is_one_line_in_bounded_memory(example_videos):
    ran = subprocess.run([sys.executable, "-c", BOUNDED, "diff", str(example_videos / "box.mp4"),
                          str(example_videos / "cup.mp4"), "--action", "x", "--statements", "/dev/urandom"],
                         capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert ran.returncode == 2, ran.stderr
    # a device is refused by its kind before a byte is read (an endless one never reaches the size cap)
    assert ran.stderr.strip().splitlines() == ["error: cannot read statements file /dev/urandom: it is a device, "
                                               "not a file"]


def test_diff_statements_nested_100k_deep_is_one_line(example_videos, tmp_path):
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    line = one_line_error(runner.invoke(app, ["diff", str(example_videos / "box.mp4"), str(example_videos / "cup.mp4"),
                                              "--action", "x", "--statements", str(deep)]))
    assert "nests more than 64 levels deep" in line


@pytest.mark.parametrize("command", [
    ["diff", "{v}/box.mp4", "{v}/cup.mp4", "--action", "x", "--statements", "{big}"],
    ["bench", "correlation", "--gt", "{big}", "-s", "{big}"],
])
def test_json_with_a_number_of_5000_digits_is_one_line(example_videos, tmp_path, command):
    big = tmp_path / "big.json"
    big.write_text("[" + "9" * 5000 + "]")  # Python converts integers of at most 4,300 digits
    line = one_line_error(runner.invoke(app, [a.format(v=example_videos, big=big) for a in command]))
    assert f"{big} holds a value convis does not read: Exceeds the limit (4300 digits)" in line


@pytest.mark.parametrize("args, says", [
    (["diff", "{v}/box.mp4", "{v}/cup.mp4", "--action", "x", "-s", "y", "--fps", "1e9"],
     "--fps must be a positive number of frames a second, at most 120"),
    (["diff", "{v}/box.mp4", "{v}/cup.mp4", "--action", "x", "-s", "y", "--fps", "nan"],
     "--fps must be a positive number"),
    (["index", "{v}", "--index-dir", "{tmp}/ix", "-i", "efficientnet-lite0", "--segment", "100000"],
     "segments must be at most 86400 s long"),
    (["index", "{v}", "--index-dir", "{tmp}/ix", "-i", "efficientnet-lite0", "--segment", "shots", "--shot-min",
      "0", "--shot-max", "0.01"], "--shot-max must be 0.5 to 86400 seconds"),
    (["index", "{v}", "--index-dir", "{tmp}/ix", "-i", "efficientnet-lite0", "--segment", "shots", "--shot-min",
      "1e9"], "Invalid value for '--shot-min'"),
    (["query", "--anchor", "{v}/box.mp4", "-c", "location", "-k", "1000000000000"], "Invalid value for '-k'"),
    (["query", "--anchor", "{v}/box.mp4", "-c", "location=1e6", "-c", "main-action"],
     "concept weight must be a number from 0.001 to 1000"),
    (["query", "--anchor", "{v}/box.mp4", "-c", "location=1e-300", "-c", "main-action"],
     "concept weight must be a number from 0.001 to 1000"),
])
def test_numbers_out_of_their_range_are_one_line_exit_2_before_any_model(example_videos, tmp_path, args, says):
    args = [a.format(v=example_videos, tmp=tmp_path) for a in args]
    assert says in one_line_error(runner.invoke(app, args))
    assert not (tmp_path / "ix").exists()  # refused before an index was made


def test_request_values_hold_the_same_ranges():
    from retrieval.api import ConvisError, DiffRequest, QueryRequest, SearchRequest

    for make in (lambda: QueryRequest("a.mp4", ["location"], k=1001), lambda: QueryRequest("a.mp4", ["location"], k=0),
                 lambda: SearchRequest("a cup", k=10**12), lambda: DiffRequest("a.mp4", "b.mp4", "x", fps=121.0)):
        with pytest.raises(ConvisError) as caught:
            make()
        assert caught.value.exit_code == 2
    assert QueryRequest("a.mp4", ["location"], k=1000).k == 1000


EVIL = "evil\x1b[2J\rname.mp4"  # clears the screen, then overwrites the line
EVIL_SHOWN = "evil\\x1b[2J\\rname.mp4"


def test_names_with_control_characters_are_shown_escaped_in_every_output(example_videos, tmp_path):
    videos = tmp_path / "videos"
    videos.mkdir()
    shutil.copy(example_videos / "cup.mp4", videos / EVIL)
    shutil.copy(example_videos / "box.mp4", videos / "box.mp4")
    (videos / "broken\x1b]0;pwned\x07.mp4").write_bytes(b"not a video")
    runs = [runner.invoke(app, ["index", str(videos), "-i", "efficientnet-lite0", "--workers", "1"]),
            runner.invoke(app, ["ls", str(videos)]),
            runner.invoke(app, ["info", str(videos)]),
            runner.invoke(app, ["query", "--anchor", str(videos / "box.mp4"), "-c", "location"]),
            runner.invoke(app, ["query", "--anchor", str(videos / EVIL), "-c", "location"]),
            runner.invoke(app, ["remove", str(videos / EVIL)]),
            runner.invoke(app, ["query", "--anchor", str(videos / "nothing\x1b[31m.mp4"), "-c", "location"])]
    for ran in runs:
        shown = ran.stdout + ran.stderr
        assert "\x1b" not in shown and "\r" not in shown and "\x07" not in shown, shown
    assert all(ran.exit_code == 0 for ran in runs[:-1]), [r.output for r in runs]
    assert EVIL_SHOWN in flat(runs[1].stdout) and "broken\\x1b]0;pwned\\x07.mp4" in flat(runs[0].stdout)
    assert EVIL_SHOWN in flat(runs[5].stdout) and "nothing\\x1b[31m.mp4" in flat(runs[6].stderr)


def flat(text: str) -> str:
    """A table's text without its borders and wrapping (long names fold across lines)."""
    return "".join(c for c in text if not c.isspace() and c not in "│┃")
