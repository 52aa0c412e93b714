"""Folders a command may not write, as tests make them: tests run as root here, and root writes wherever it likes,
so a command runs in a child whose capabilities to override file permissions are dropped (`setpriv`) and the
folder's permission bits apply to it as to any user."""

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.paths import ROOT

SETPRIV = shutil.which("setpriv")
AS_USER = [] if os.geteuid() != 0 else [SETPRIV, "--bounding-set=-dac_override,-dac_read_search"]
needs_permissions = pytest.mark.skipif(os.geteuid() == 0 and SETPRIV is None,
                                       reason="root without setpriv: permission bits do not apply")


def convis_as_user(*args, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    """`convis ARGS` run in a child that the permission bits apply to."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    return subprocess.run([*AS_USER, sys.executable, str(ROOT / "cli.py"), *map(str, args)], capture_output=True,
                          text=True, cwd=cwd, env=env, timeout=300)


def read_only(folder: Path) -> None:
    for path in [folder, *folder.rglob("*")]:
        path.chmod(path.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))


def writable(folder: Path) -> None:
    for path in [folder, *folder.rglob("*")]:
        path.chmod(path.stat().st_mode | stat.S_IWUSR)
