"""A process numbered in a file is alive while it exists, whoever's it is; numbers that name groups never are."""

import os
import subprocess
import sys

import pytest

from retrieval.core.processes import pid_alive, pid_user


def test_this_process_is_alive_and_an_ended_one_is_not():
    assert pid_alive(os.getpid())
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()  # reaped: its number names no process now
    assert not pid_alive(child.pid)


@pytest.mark.parametrize("pid", [0, -1, 2**80])
def test_numbers_naming_groups_or_none_are_not_alive(pid):
    assert not pid_alive(pid)


def test_another_users_process_is_alive(monkeypatch):
    def refused(pid, signal):
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(os, "kill", refused)
    assert pid_alive(12345)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_live_process_runs_as_its_user_and_an_ended_one_as_none():
    assert pid_user(os.getpid()) == os.getuid()
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    assert pid_user(child.pid) is None
