"""Whether a file's streams decode cleanly, and the verdicts kept so that each file is checked once.

A file can name a codec browsers play and still not play: an H.264 stream with a broken slice ("A non-intra slice
in an IDR NAL unit") stops Chromium's decoder (PIPELINE_ERROR_DECODE), while ffmpeg reads past it.  The container and
codec say nothing of that, so the first seconds are decoded with the ffmpeg tool and any error it reports counts.
Decoding is bounded (the first :data:`CHECK_SECONDS`, at most :data:`CHECK_TIMEOUT_S` of wall time): errors later in a
file are left to the browser, whose decode error the web app answers by asking for a preview.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
from pathlib import Path

from retrieval.core.errors import one_line
from retrieval.core.files import atomic_write

CHECK_SECONDS = 10  # of the file's start: where a browser's decoder meets a broken stream first
CHECK_TIMEOUT_S = 30  # a file that decodes this slowly is not held up further: it counts as clean
VERDICTS_NAME = "stream-checks.json"


def stream_errors(path: str | os.PathLike, seconds: float = CHECK_SECONDS,
                  timeout: float = CHECK_TIMEOUT_S) -> str | None:
    """The first error ffmpeg reports decoding the first ``seconds`` of ``path`` (one line, the file by its name),
    or None: it decodes cleanly, or ffmpeg cannot tell (not installed, too slow)."""
    ffmpeg = shutil.which("ffmpeg")
    if ffmpeg is None:
        return None
    source = os.path.abspath(path)
    # "file:" so a name with a colon is never taken for a protocol; -t before -i reads no more than that
    command = [ffmpeg, "-nostdin", "-hide_banner", "-v", "error", "-t", f"{seconds:g}", "-i", f"file:{source}",
               "-f", "null", "-"]
    try:
        done = subprocess.run(command, capture_output=True, text=True, errors="replace", timeout=timeout)
    except (subprocess.TimeoutExpired, OSError):
        return None
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    if not lines and done.returncode == 0:
        return None
    first = lines[0] if lines else f"ffmpeg exit status {done.returncode}"
    first = first.split("] ", 1)[-1] if first.startswith("[") else first  # "[h264 @ 0x55...] " names an address
    for form in (f"file:{source}", source, str(path)):
        first = first.replace(form, Path(path).name)
    return one_line(first.rstrip("."))


class StreamVerdicts:
    """:func:`stream_errors` of each file version (path, size, mtime), kept in a JSON file (in the index folder) so
    that a file is decoded once, by this server or the next; a file that cannot be read or written costs a fresh
    check, never an answer."""

    def __init__(self, file: Path):
        self.file = Path(file)
        self._lock = threading.Lock()
        self._known: dict[str, str | None] | None = None

    def errors(self, path: Path) -> str | None:
        """The stream errors of ``path``, checked now only if this version of it never was."""
        key = _key(path)
        with self._lock:
            known = self._loaded()
            if key in known:
                return known[key]
        found = stream_errors(path)  # decoded outside the lock: other files are looked up meanwhile
        self.remember(path, found)
        return found

    def remember(self, path: Path, errors: str | None) -> None:
        """Keep ``errors`` as the verdict on ``path`` (a browser's decode error counts as one too)."""
        key = _key(path)
        with self._lock:
            known = self._loaded()
            known.update(self._read())  # what another server kept meanwhile stays
            known[key] = errors
            try:
                self.file.parent.mkdir(parents=True, exist_ok=True)
                atomic_write(self.file, lambda tmp: Path(tmp).write_text(json.dumps(known), encoding="utf-8"))
            except OSError:  # a read-only index: the verdict is kept in memory only
                pass

    def _loaded(self) -> dict[str, str | None]:
        if self._known is None:
            self._known = self._read()
        return self._known

    def _read(self) -> dict[str, str | None]:
        try:
            found = json.loads(self.file.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return {k: v for k, v in found.items() if isinstance(v, (str, type(None)))} if isinstance(found, dict) else {}


def _key(path: Path) -> str:
    stat = Path(path).stat()
    return f"{Path(path).resolve()}|{stat.st_size}|{stat.st_mtime_ns}"
