"""What the requests of one server share: the engine, the uploads, the decoder and its strips, the reranker's turn,
the workers, and how a ref becomes a file (``safe_path``: only videos inside the index root)."""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator

from fastapi.encoders import jsonable_encoder
from fastapi.responses import JSONResponse, Response

from retrieval.api import VIDEO_EXTENSIONS, Engine, VideoDecoder
from retrieval.serve.errors import WINDOWS, ApiError, without_paths
from retrieval.serve.fields import MAX_REF_CHARS
from retrieval.serve.health import KeptIndex, KeptListing
from retrieval.serve.playback import PlaybackLinks
from retrieval.serve.thumbs import THUMB_SHORT_SIDE, Thumb, strip
from retrieval.serve.uploads import UPLOAD_REF, UploadStore
from retrieval.serve.warmup import Warmup
from retrieval.serve.wording import http_words
from retrieval.serve.workers import Workers

STRIP_CACHE_SIZE = 256  # strips of ~8 small JPEGs: a few MB at most


@dataclass
class ServerState:
    engine: Engine
    reranker: str | None
    uploads: UploadStore
    decoder: VideoDecoder = field(default_factory=lambda: VideoDecoder(short_side=THUMB_SHORT_SIDE))
    # requests are answered at the same time; those that ask the reranker take turns (one model, one score cache)
    reranker_lock: threading.Lock = field(default_factory=threading.Lock)
    strips: OrderedDict = field(default_factory=OrderedDict)
    strips_lock: threading.Lock = field(default_factory=threading.Lock)
    index_dir: Path | None = None
    links: PlaybackLinks | None = None  # which URL plays each clip (see playback.py)
    allow_writes: bool = False  # `convis serve --allow-writes`: the app may add, remove and re-index files
    warmup: Warmup | None = None  # the models requests need, built behind the listening server (see warmup.py)
    # heavy work (decoding, models, the engine's verbs) runs here, never on the event loop (see workers.py)
    workers: Workers = field(default_factory=Workers)
    kept: KeptIndex | None = None  # what /health says of the index, kept up to date (see health.py)
    listing: KeptListing | None = None  # the index's files, read once for each state of the index (health.py)
    _root: Path | None = None

    @property
    def root(self) -> Path:
        if self._root is None:  # read once: the catalog may be busy now and free later
            self._root = self.engine.root.resolve()
        return self._root

    async def answer(self, make: Callable[..., dict], *args) -> Response:
        """``make(*args)`` run by the workers, and encoded as JSON there too: the event loop only sends it."""
        return await self.workers.run(lambda: JSONResponse(jsonable_encoder(make(*args))))

    def files(self, notices: list[str] | None = None) -> list:
        """Every file the index knows (``Engine.files``), as the index is now."""
        return self.listing.get([] if notices is None else notices)

    def resolve(self, ref: str) -> Path:
        """The file a ref names, or ApiError: only videos inside the root (or uploaded here)."""
        return self.uploads.path(ref) or safe_path(self.root, ref)

    def anchor_name(self, ref: str) -> str:
        """How the client shows an anchor: an upload by the file name it was uploaded under, else its ref."""
        return self.uploads.name(ref) if UPLOAD_REF.fullmatch(ref) else ref

    def public(self, message: str) -> str:
        """``message`` without the server's own folders: files inside the root by their refs, others by name."""
        named = [(self.uploads.folder, ".uploads")]
        if self._root is not None:  # not looked up here: an error may come from a busy catalog
            named.append((self._root, ""))
        return http_words(without_paths(message, named))

    def playing(self, ref: str) -> dict:
        """``media`` (a URL the browser plays, or None) and ``playback`` (how, or why not) for a ref; a file gone
        since it was indexed is one item that cannot play, not a failed answer."""
        try:
            return self.links.of(ref, self.resolve(ref))
        except (ApiError, OSError) as exc:
            reason = str(exc) if isinstance(exc, ApiError) else "the file cannot be read"
            return {"media": None, "playback": {"kind": "none", "reason": self.public(reason)}}

    @contextmanager
    def asking(self, reranker) -> Iterator[None]:
        """While a request asks ``reranker`` (None: no model, no turn to wait for)."""
        if reranker is None:
            yield
            return
        with self.reranker_lock:
            yield

    def reranker_for(self, wanted: bool) -> str | None:
        if not wanted:
            return None
        if self.reranker is None:
            raise ApiError(400, "this server has no reranker: start it with `convis serve --reranker NAME`")
        return self.reranker

    def strip_of(self, ref: str, start: float, end: float | None, n: int) -> list[Thumb]:
        return self.thumbs(self.resolve(ref), start, end, n)

    def thumbs(self, path: Path, start: float, end: float | None, n: int) -> list[Thumb]:
        stat = path.stat()
        key = (str(path), stat.st_mtime_ns, stat.st_size, start, end, n)
        with self.strips_lock:
            if key in self.strips:
                self.strips.move_to_end(key)
                return self.strips[key]
        thumbs = strip(path, start, end, n, self.decoder)  # decoded outside the lock: other strips go on
        with self.strips_lock:
            self.strips[key] = thumbs
            while len(self.strips) > STRIP_CACHE_SIZE:
                self.strips.popitem(last=False)
        return thumbs


def safe_path(root: Path, ref: str) -> Path:
    """``root / ref`` if it is a video file really inside ``root``; ApiError otherwise."""
    if not ref or len(ref) > MAX_REF_CHARS or "\x00" in ref or (WINDOWS and "\\" in ref):
        raise ApiError(400, f"not a valid path: {ref!r}")
    if ref.startswith("/") or (WINDOWS and re.match(r"[A-Za-z]:", ref)):
        raise ApiError(400, "absolute paths are not served; give a path relative to the index root")
    parts = ref.split("/")  # not PurePosixPath: it drops "." and "" parts, and refs must be canonical
    if any(p.startswith(".") for p in parts):  # "..", "." and hidden files (the index itself lives in .convis)
        raise ApiError(400, "paths with '..' or hidden parts are not served")
    if "" in parts:
        raise ApiError(400, f"not a valid path: {ref!r}")
    try:
        real = (root / ref).resolve()
        found = real.is_file()
    except (OSError, RuntimeError):  # a name too long for the filesystem, a symlink loop: no such file here
        raise ApiError(404, f"no such file: {ref}") from None
    if not real.is_relative_to(root):
        raise ApiError(403, "that path leads outside the index root")
    if not found:
        raise ApiError(404, f"no such file: {ref}")
    if real.suffix.lower() not in VIDEO_EXTENSIONS:
        raise ApiError(404, f"not a video: {ref}")
    return real


