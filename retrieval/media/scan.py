"""Find the video files under a folder and fingerprint their contents."""

from __future__ import annotations

import errno
import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

from retrieval.core.files import too_long

VIDEO_EXTENSIONS = frozenset({
    ".mp4", ".m4v", ".mov", ".mkv", ".webm", ".avi", ".mpg", ".mpeg", ".wmv", ".flv", ".ts", ".mts",
    ".m2ts", ".3gp", ".ogv", ".vob", ".mxf", ".gif",
})


@dataclass(frozen=True)
class FoundFile:
    path: str  # absolute
    rel: str  # relative to the root, POSIX separators (the catalog key)
    size: int
    mtime: float
    # the inode's change time and number: a rewrite that restores size and mtime (os.utime, a copy with -p) still
    # moves them, so a file whose key moved is hashed again (git and rsync watch the same); "" when not read
    stat_key: str = ""


def find_videos(root: Path, skip: Path | None = None) -> tuple[list[FoundFile], list[tuple[str, str]]]:
    """Video files below ``root`` and (path, reason) for entries that can't be read.

    Symlinked directories are not followed (no loops); symlinked files are taken only when
    they resolve inside ``root``, so an index never reaches outside what the user pointed at.
    """
    root = root.resolve()
    found, problems = [], []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False, onerror=lambda e: problems.append(
            _unlisted(root, e))):
        here = Path(dirpath)
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and (skip is None or here / d != skip))
        for name in sorted(filenames):
            if Path(name).suffix.lower() not in VIDEO_EXTENSIONS or name.startswith("."):
                continue
            entry = _inspect(root, here / name)
            (found if isinstance(entry, FoundFile) else problems).append(entry)
    return found, problems


def _inspect(root: Path, path: Path) -> FoundFile | tuple[str, str]:
    rel = path.relative_to(root).as_posix()
    if not _is_text(rel):
        # the catalog, reports and terminals hold text; such a name is shown with its odd bytes escaped
        return shown_name(rel), "file name is not valid UTF-8 (rename it to index it)"
    try:
        real = path.resolve(strict=True)
        if path.is_symlink() and not real.is_relative_to(root):
            return rel, "symlink points outside the indexed folder"
        stat = real.stat()
    except (OSError, RuntimeError) as exc:  # RuntimeError: symlink loop on some Pythons
        if getattr(exc, "errno", None) == errno.ENAMETOOLONG:
            return rel, too_long(path)
        return rel, f"cannot read: {getattr(exc, 'strerror', None) or exc}"
    if not os.access(real, os.R_OK):
        return rel, "cannot read: permission denied"
    return FoundFile(str(path), rel, stat.st_size, stat.st_mtime, stat_key(stat))


def _unlisted(root: Path, error: OSError) -> tuple[str, str]:
    """A folder os.walk could not list, by its path relative to ``root`` (the problem list's key) and why."""
    folder = Path(str(error.filename))
    shown = shown_name(folder.relative_to(root).as_posix() if folder.is_relative_to(root) else str(folder))
    if error.errno == errno.ENAMETOOLONG:
        return shown, too_long(folder)
    return shown, f"cannot list folder: {error.strerror}"


def stat_key(stat: os.stat_result) -> str:
    """What ``FoundFile.stat_key`` holds for a file's ``stat``."""
    return f"{stat.st_ctime_ns}:{stat.st_ino}"


def _is_text(name: str) -> bool:
    """False for a name holding bytes that are not UTF-8 (Python keeps them as lone surrogates)."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def shown_name(name: str) -> str:
    """``name`` as printable text: bytes that are not UTF-8 become ``\\xNN``."""
    return os.fsencode(name).decode("utf-8", "backslashreplace")


def content_hash(path: str | os.PathLike, chunk: int = 4 << 20) -> str:
    """BLAKE2b-128 of the file's bytes: identity for the rerank cache and moved-file detection."""
    digest = hashlib.blake2b(digest_size=16)
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            digest.update(block)
    return digest.hexdigest()
