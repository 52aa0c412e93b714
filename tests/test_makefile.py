"""The Makefile parses and names every target the README and CI call (a dry run: nothing is executed)."""

import shutil
import subprocess

import pytest

from tests.paths import ROOT


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_every_target_of_the_makefile_parses():
    targets = ["install", "demo", "bench-demo", "docs", "test", "test-slow", "browser", "ffmpeg", "clean"]
    ran = subprocess.run(["make", "-n", "-C", str(ROOT), *targets], capture_output=True, text=True, timeout=60)
    assert ran.returncode == 0, ran.stderr
