"""Careless or hostile input on the command line: endless and deeply nested files, absurd numbers, names that
would steer the terminal. Each is one line and a non-zero exit, said before any model loads."""

import subprocess
import sys

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
    assert ran.stderr.strip().splitlines() == ["error: statements file /dev/urandom is larger than 1 MiB, the most "
                                               "convis reads of such a file"]


def test_diff_statements_nested_100k_deep_is_one_line(example_videos, tmp_path):
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    line = one_line_error(runner.invoke(app, ["diff", str(example_videos / "box.mp4"), str(example_videos / "cup.mp4"),
                                              "--action", "x", "--statements", str(deep)]))
    assert "nests more than 64 levels deep" in line
