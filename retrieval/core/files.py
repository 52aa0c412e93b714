"""Files that are either the old version or the new one, never half of each."""

from __future__ import annotations

import os
import stat
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
        os.chmod(tmp, _plain_mode(path))  # mkstemp makes it 0600: end as readable as open() would have left it
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _plain_mode(path: Path) -> int:
    """The mode ``open(path, "w")`` would leave: an existing file's own, else 0666 less the umask."""
    try:
        return stat.S_IMODE(path.stat().st_mode)
    except OSError:
        return 0o666 & ~current_umask()


def current_umask() -> int:
    """The process's umask: read from /proc where Linux shows it, else set and restored at once."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o077)  # a restrictive mask for the instant it is in place, should another thread create a file
    os.umask(mask)
    return mask


def atomic_write_bytes(path: str | Path, write: Callable) -> None:
    """:func:`atomic_write` for writers that take an open binary file (``np.savez``, ``json.dump`` on bytes)."""

    def to_file(tmp: str) -> None:
        with open(tmp, "wb") as fh:
            write(fh)

    atomic_write(path, to_file)


def too_long(path: Path) -> str:
    """Why a path the system refuses as too long is skipped, with the limit it is over: the kernel refuses a path
    of PATH_MAX bytes or more, or a part over NAME_MAX, whatever its parts' folders hold."""
    limit = _limit("PC_PATH_MAX", 4096)
    size = len(os.fsencode(str(path)))
    if size >= limit:
        return (f"path too long for this system ({size:,} bytes; the limit is {limit:,}): move or rename a folder "
                "above it to index it")
    return f"a name in the path is too long for this filesystem (over {_limit('PC_NAME_MAX', 255)} bytes)"


def _limit(name: str, default: int) -> int:
    try:
        return os.pathconf("/", name)
    except (OSError, ValueError, AttributeError):  # not on this system (Windows has no pathconf)
        return default
