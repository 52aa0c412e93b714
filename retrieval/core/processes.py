"""Whether a process numbered in a file (a writer's mark, a job record, an upload folder's name) still runs."""

from __future__ import annotations

import os
from pathlib import Path


def pid_alive(pid: int) -> bool:
    """A process numbered ``pid`` exists (a zombie not yet reaped included).

    Signal 0 checks without signalling. PermissionError means the process exists but belongs to another user, so
    it counts as alive: the kernel found it, and only a live process can be refused a signal. Whether it is the
    process a caller recorded (its number may have been reused since) is the caller's question: see ``pid_user``.
    """
    if pid <= 0:
        return False  # 0 and negative numbers name process groups (-1: every process), never one process
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OverflowError:
        return False  # no process has a number that large
    return True


def pid_user(pid: int) -> int | None:
    """The user id a live process runs as, where the system says (Linux's /proc); None elsewhere, or once it ended."""
    try:
        return Path(f"/proc/{pid}").stat().st_uid
    except (OSError, ValueError):
        return None
