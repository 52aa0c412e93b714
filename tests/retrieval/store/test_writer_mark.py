"""The writer's mark names a live writer; a mark left by a killed writer, or whose number another user's process
took since, names none."""

import os
import subprocess
import sys

from retrieval.store import snapshots
from retrieval.store.snapshots import WRITER_MARK, writer_pid


def _marked(tmp_path, pid: int):
    (tmp_path / WRITER_MARK).write_text(str(pid))
    return tmp_path / "catalog.duckdb"


def test_a_live_writer_is_named_and_a_killed_ones_mark_is_ignored(tmp_path):
    writer = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        assert writer_pid(_marked(tmp_path, writer.pid)) == writer.pid
    finally:
        writer.kill()
        writer.wait()
    assert writer_pid(_marked(tmp_path, writer.pid)) is None
    assert writer_pid(_marked(tmp_path, os.getpid())) is None  # this process is no other writer


def test_a_mark_whose_number_another_users_process_took_is_ignored(tmp_path, monkeypatch):
    writer = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        catalog = _marked(tmp_path, writer.pid)
        monkeypatch.setattr(snapshots, "pid_user", lambda pid: os.getuid() + 1)
        assert writer_pid(catalog) is None
        monkeypatch.setattr(snapshots, "pid_user", lambda pid: None)  # a system that does not say: alive is all
        assert writer_pid(catalog) == writer.pid
    finally:
        writer.kill()
        writer.wait()
