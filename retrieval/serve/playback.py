"""Which URL plays a clip in the browser: the file itself, its H.264 preview, or nothing (with the reason).

Browsers play few codecs (H.264, VP8/9, AV1 in MP4 or WebM); an AVI of MS-MPEG4 shows a black player.  Such a
file is linked to ``/previews/<ref>``, which makes an H.264 preview with ffmpeg on the first request and keeps it
in the index folder (``previews/<content hash>.mp4``), so the next request, and the next server, reuse it.
Without ffmpeg the link is None and the reason says why, so the app shows "cannot play" instead of a black box.

A file of a codec browsers play may still hold a stream they cannot decode: its first seconds are decoded with ffmpeg
once (the verdict kept in the index, see stream_check.py), and a file with an error is linked to its preview too.
Where the browser still fails on an original, the app asks ``/previews/<ref>?force=1``: a preview is made whatever
the verdict was, and the file is linked to its preview from then on.
"""

from __future__ import annotations

import threading
from pathlib import Path
from urllib.parse import quote

from retrieval.api import Playback, Previews, content_hash, ffmpeg_missing

PREVIEWS_DIRNAME = "previews"
ENCODES_AT_ONCE = 2  # ffmpeg runs a server starts together: each takes cores; the strips and thumbnails go on
BROWSER_FAILED = "a browser could not decode it"  # the verdict a forced preview keeps


def media_url(ref: str) -> str:
    return "/media/" + quote(ref)


def preview_url(ref: str) -> str:
    return "/previews/" + quote(ref)


class PlaybackLinks:
    """Per file (by path, size and mtime), whether the browser plays it, and its content hash once a preview
    needs it; both cached, as probing and hashing read the file."""

    def __init__(self, previews: Previews):
        self.previews = previews
        self._seen: dict[tuple, Playback] = {}
        self._hashes: dict[tuple, str] = {}
        self._lock = threading.Lock()
        self._encoding = threading.BoundedSemaphore(ENCODES_AT_ONCE)

    def of(self, ref: str, path: Path) -> dict:
        """``{"media": url or None, "playback": {"kind": original|preview|none, "reason"}}`` for the app."""
        found = self.judge(path)
        if found.playable:
            return {"media": media_url(ref), "playback": {"kind": "original", "reason": None}}
        missing = ffmpeg_missing()
        if missing:  # not even a cached preview is looked for: that would read the whole file for its hash
            return {"media": None, "playback": {"kind": "none", "reason": f"{found.reason}; {missing}"}}
        return {"media": preview_url(ref), "playback": {"kind": "preview", "reason": found.reason}}

    def judge(self, path: Path) -> Playback:
        return self._remembered(self._seen, path, self.previews.playback)

    def playable_file(self, path: Path, force: bool = False) -> Path:
        """The file to send for ``path``: itself when the browser plays it (unless ``force``: a browser failed on
        it), else its preview (made now if need be; PreviewError when it cannot be)."""
        if force and self.judge(path).playable:
            self.previews.verdicts.remember(path, BROWSER_FAILED)
            with self._lock:
                self._seen.pop(_key(path), None)  # linked to its preview from now on
        elif self.judge(path).playable:
            return path
        with self._encoding:  # a page of AVI results asks for all of them at once; the rest wait their turn
            return self.previews.ensure(path, self._hash(path))

    def _hash(self, path: Path) -> str:
        return self._remembered(self._hashes, path, content_hash)

    def _remembered(self, store: dict, path: Path, compute):
        """``compute(path)`` once per file version (path, size, mtime); computed outside the lock, as it reads
        the file."""
        key = _key(path)
        with self._lock:
            if key in store:
                return store[key]
        value = compute(path)
        with self._lock:
            store[key] = value
        return value


def _key(path: Path) -> tuple:
    stat = path.stat()
    return str(path), stat.st_size, stat.st_mtime_ns
