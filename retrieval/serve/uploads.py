"""Anchor clips uploaded through ``POST /uploads``: stored by content hash, checked, and held within a quota.

- Size: the route's body limit cuts a request off at ``max_bytes`` while it streams (see server.py); the copy
  here stops at the same limit in case a body reaches it some other way.
- Content: an upload must decode as a video (one frame is read) or it is refused with 415 and removed.
- Quota: when the uploads together pass ``quota`` bytes, the oldest are removed (uploads are scratch anchors;
  a new one is what the user is working with now).  A ref to a removed upload answers 404; uploading the
  clip again brings it back under the same ref.
- Name: the client's file name is kept beside the upload (``<stored name>.json``), so the anchor is shown by it
  for as long as the upload lasts, whichever request or page asks.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path

from fastapi import UploadFile

from retrieval.api import VIDEO_EXTENSIONS, DecodeError, VideoDecoder
from retrieval.serve.errors import ApiError

UPLOADS = ".uploads"
UPLOAD_NAME = re.compile(r"[0-9a-f]{32}\.[a-z0-9]{1,5}")
UPLOAD_REF = re.compile(rf"\.uploads/({UPLOAD_NAME.pattern})")
MiB = 1 << 20
REASON_CHARS = 200  # a decoder's reason, cut to what an error line can show


@dataclass
class UploadStore:
    folder: Path
    max_bytes: int
    quota: int
    decoder: VideoDecoder
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self):
        if self.quota < self.max_bytes:
            raise ValueError(f"the upload quota ({self.quota // MiB} MiB) must hold at least one upload "
                             f"({self.max_bytes // MiB} MiB)")

    def path(self, ref: str) -> Path | None:
        """The file of an upload ref, None if ``ref`` is not one; ApiError if that upload is gone."""
        match = UPLOAD_REF.fullmatch(ref)
        if not match:
            return None
        path = self.folder / match.group(1)
        if not path.is_file():
            raise ApiError(404, f"no such upload: {ref} (uploads last as long as the server, and the oldest are "
                                "removed when uploads pass the server's quota: upload it again)")
        return path

    def name(self, ref: str) -> str:
        """The file name the client uploaded ``ref`` under (the stored name when it gave none usable, or when
        its record is unreadable)."""
        stored = ref.rsplit("/", 1)[-1]
        try:
            named = json.loads(_sidecar(self.folder / stored).read_text(encoding="utf-8")).get("name")
        except (OSError, ValueError, AttributeError):
            return stored
        return named if isinstance(named, str) and named else stored

    def save(self, upload: UploadFile) -> tuple[str, int]:
        """Store a checked clip under its content hash (the same clip twice is one file): its ref and size."""
        suffix = Path(upload.filename or "").suffix.lower()
        if suffix not in VIDEO_EXTENSIONS:
            raise ApiError(415, f"not a video file name: {upload.filename!r} "
                                f"(expected one of {', '.join(sorted(VIDEO_EXTENSIONS))})")
        tmp, digest, size = self._copy(upload, suffix)
        try:
            self._check_video(tmp, upload.filename)
            name = digest + suffix
            with self.lock:  # uploads run in parallel threads: one at a time makes room and takes it
                # the latest name it was uploaded under, kept before the clip itself is in place
                _sidecar(self.folder / name).write_text(json.dumps({"name": client_name(upload.filename, name)}),
                                                        encoding="utf-8")
                tmp.replace(self.folder / name)  # replacing a same-content file makes it the newest again
                self._make_room(keep=name)
        finally:
            tmp.unlink(missing_ok=True)
        return f"{UPLOADS}/{name}", size

    def _copy(self, upload: UploadFile, suffix: str) -> tuple[Path, str, int]:
        digest, size = hashlib.blake2b(digest_size=16), 0
        # a hidden name: never taken for an upload, nor counted against the quota until it is checked
        with tempfile.NamedTemporaryFile(dir=self.folder, prefix=".part-", suffix=suffix, delete=False) as tmp:
            try:
                while block := upload.file.read(MiB):
                    size += len(block)
                    if size > self.max_bytes:
                        raise ApiError(413, f"upload larger than {self.max_bytes // MiB} MiB")
                    digest.update(block)
                    tmp.write(block)
            except BaseException:
                Path(tmp.name).unlink(missing_ok=True)
                raise
        return Path(tmp.name), digest.hexdigest(), size

    def _check_video(self, path: Path, filename: str | None) -> None:
        try:
            self.decoder.sample_span(path, 1, 0.0, None)
        except DecodeError as exc:
            # one readable line: the client's name for the file, never where the server keeps it
            reason = " ".join(str(exc).replace(str(path), "the file").split())[:REASON_CHARS]
            raise ApiError(415, f"{filename or 'the upload'} is not a video this server can decode: {reason}") \
                from None

    def _make_room(self, keep: str) -> None:
        """Remove the oldest uploads until all of them fit in the quota (never the one just stored)."""
        stored = []
        for entry in os.scandir(self.folder):
            if UPLOAD_NAME.fullmatch(entry.name) and entry.is_file():
                stat = entry.stat()
                stored.append((stat.st_mtime_ns, entry.name, stat.st_size))
        total = sum(size for _, _, size in stored)
        for _, name, size in sorted(stored):
            if total <= self.quota:
                break
            if name != keep:
                (self.folder / name).unlink(missing_ok=True)
                _sidecar(self.folder / name).unlink(missing_ok=True)
                total -= size


def _sidecar(stored: Path) -> Path:
    """Where the client's name of a stored upload is kept: beside it, a name no upload can take."""
    return stored.with_name(stored.name + ".json")


def client_name(filename: str | None, stored: str) -> str:
    """The last part of a client's file name, if it makes a plain visible file name with the stored suffix."""
    name = (filename or "").replace("\\", "/").rsplit("/", 1)[-1].strip()
    usable = name and not name.startswith(".") and "\x00" not in name and len(name.encode()) <= 200
    return name if usable and Path(name).suffix.lower() == Path(stored).suffix else stored
