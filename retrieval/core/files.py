"""Files that are either the old version or the new one, never half of each."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Callable


def atomic_write(path: str | Path, write: Callable[[str], None]) -> None:
    """Call ``write(tmp)`` on a temporary path beside ``path``, flush it to disk, then rename it over
    ``path``: a run killed part-way leaves the previous file whole (rename is atomic on POSIX)."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        write(tmp)
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def atomic_write_bytes(path: str | Path, write: Callable) -> None:
    """:func:`atomic_write` for writers that take an open binary file (``np.savez``, ``json.dump`` on bytes)."""

    def to_file(tmp: str) -> None:
        with open(tmp, "wb") as fh:
            write(fh)

    atomic_write(path, to_file)
