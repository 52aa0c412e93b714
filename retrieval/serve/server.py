"""``convis serve``: a JSON API and a small web UI over one index.

Clips are named by *refs*: a path relative to the index root (``campus_01.mp4``), or
``.uploads/<hash>.<ext>`` for an anchor uploaded through ``POST /uploads``.  Indexing never
takes hidden files, so the ``.uploads/`` namespace cannot collide with an indexed path.

Only files inside the index root are ever read or served: refs with ``..``, hidden parts or
absolute paths are refused, and a ref whose real path (symlinks resolved) leaves the root is
forbidden.  The catalog is opened read-only for each request: while a concurrent ``convis index``
holds it, requests read the run's last published snapshot, and before there is one they get a
503 with a retry hint instead of a crash.
"""

from __future__ import annotations

import functools
import hashlib
import re
import shutil
import tempfile
import threading
from collections import OrderedDict
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Literal, Sequence
from urllib.parse import quote, urlencode

from fastapi import FastAPI, File, Query, UploadFile
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse, Response
from pydantic import BaseModel, Field

from indexers.errors import ModelUnavailableError
from rerankers.base import RerankerError
from retrieval.core.concepts import CloseToConcept, Concept, ConceptError, parse_concepts
from retrieval.core.errors import one_line
from retrieval.core.registry import UnknownModelError
from retrieval.engine import DEFAULT_K, Engine, NoIndexError
from retrieval.media.frames import DecodeError, VideoDecoder
from retrieval.media.scan import VIDEO_EXTENSIONS
from retrieval.search.anchor import AnchorError
from retrieval.search.signals import SignalError
from retrieval.serve.gallery import STYLE, THUMB_SHORT_SIDE, Thumb, strip
from retrieval.serve.guards import LOOPBACK, allowed_hosts, guard, upload_folder
from retrieval.store.catalog import CatalogBusy

UPLOADS = ".uploads"
UPLOAD_REF = re.compile(r"\.uploads/([0-9a-f]{32}\.[a-z0-9]{1,5})")
MAX_UPLOAD_BYTES = 2 << 30  # an anchor clip, not a film archive
RETRY_SECONDS = 5
STRIP_CACHE_SIZE = 256  # strips of ~8 small JPEGs: a few MB at most


class ApiError(Exception):
    """A request the server refuses: its status code and a one-line reason."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


# -- request bodies -----------------------------------------------------------------------------
FREE_TEXT_OPT_IN = 'send "free_text": true, or tick "free text" in the web UI,'
FREE_TEXT_HELP = ("Take every concept name as written: a name close to a ConViS concept (e.g. 'locaton') is "
                  "otherwise refused as a likely typo.")


class ConceptIn(BaseModel):
    name: str = Field(..., examples=["location", "main-action", "camera angle"])
    weight: float = Field(1.0, gt=0, allow_inf_nan=False)


class QueryIn(BaseModel):
    anchor: str = Field(..., description="Indexed path relative to the index root, or an upload ref.",
                        examples=["campus_01.mp4"])
    concepts: list[ConceptIn | str] = Field(..., min_length=1,
                                            description="Concepts with weights, or strings such as 'location=0.7'.")
    k: int = Field(DEFAULT_K, ge=1, le=1000)
    start: float | None = Field(None, ge=0, description="Use only the anchor from this second.")
    end: float | None = Field(None, gt=0, description="Use only the anchor up to this second.")
    rerank: bool = Field(False, description="Rescore the top candidates with the server's --reranker.")
    rerank_top: int = Field(20, ge=1, le=500)
    mode: Literal["expected", "greedy"] = "expected"
    symmetric: bool = False
    free_text: bool = Field(False, description=FREE_TEXT_HELP)


class CompareIn(BaseModel):
    a: str = Field(..., description="The anchor: indexed path or upload ref.", examples=["campus_01.mp4"])
    b: str = Field(..., description="An indexed path.", examples=["campus_02.mp4"])
    concepts: list[ConceptIn | str] = Field(..., min_length=1)
    a_start: float | None = Field(None, ge=0)
    a_end: float | None = Field(None, gt=0)
    b_start: float | None = Field(None, ge=0, description="Which unit of a segmented b (its start second).")
    rerank: bool = Field(False, description="Ask the server's --reranker (whole files) instead of the index's "
                                            "signals; either way scores are on the 0-1 scale.")
    mode: Literal["expected", "greedy"] = "expected"
    symmetric: bool = False
    free_text: bool = Field(False, description=FREE_TEXT_HELP)


def parsed_concepts(concepts: list[ConceptIn | str], free_text: bool) -> list[Concept]:
    return parse_concepts([c if isinstance(c, str) else f"{c.name}={c.weight}" for c in concepts], free_text)


# -- state shared by the requests ---------------------------------------------------------------
@dataclass
class ServerState:
    engine: Engine
    reranker: str | None
    uploads: Path
    decoder: VideoDecoder = field(default_factory=lambda: VideoDecoder(short_side=THUMB_SHORT_SIDE))
    # the Engine caches models, decoded frames and the reranker's scorer without locking
    engine_lock: threading.Lock = field(default_factory=threading.Lock)
    strips: OrderedDict = field(default_factory=OrderedDict)
    strips_lock: threading.Lock = field(default_factory=threading.Lock)
    _root: Path | None = None

    @contextmanager
    def using_engine(self):
        """The engine for one request: one at a time, with that request's notices only."""
        with self.engine_lock:
            self.engine.notices.clear()  # the Engine collects notices for one command; a server runs many
            yield self.engine

    @property
    def root(self) -> Path:
        if self._root is None:  # read once: the catalog may be busy now and free later
            with self.using_engine() as engine:
                self._root = engine.root.resolve()
        return self._root

    def resolve(self, ref: str) -> Path:
        """The file a ref names, or ApiError: only videos inside the root (or uploaded here)."""
        match = UPLOAD_REF.fullmatch(ref)
        if match:
            path = self.uploads / match.group(1)
            if not path.is_file():
                raise ApiError(404, f"no such upload: {ref} (uploads last as long as the server)")
            return path
        return safe_path(self.root, ref)

    def reranker_for(self, wanted: bool) -> str | None:
        if not wanted:
            return None
        if self.reranker is None:
            raise ApiError(400, "this server has no reranker: start it with `convis serve --reranker NAME`")
        return self.reranker

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
    if not ref or "\x00" in ref or "\\" in ref:
        raise ApiError(400, f"not a valid path: {ref!r}")
    if ref.startswith("/") or re.match(r"[A-Za-z]:", ref):
        raise ApiError(400, "absolute paths are not served; give a path relative to the index root")
    parts = ref.split("/")  # not PurePosixPath: it drops "." and "" parts, and refs must be canonical
    if any(p.startswith(".") for p in parts):  # "..", "." and hidden files (the index itself lives in .convis)
        raise ApiError(400, "paths with '..' or hidden parts are not served")
    if "" in parts:
        raise ApiError(400, f"not a valid path: {ref!r}")
    real = (root / ref).resolve()
    if not real.is_relative_to(root):
        raise ApiError(403, "that path leads outside the index root")
    if not real.is_file():
        raise ApiError(404, f"no such file: {ref}")
    if real.suffix.lower() not in VIDEO_EXTENSIONS:
        raise ApiError(404, f"not a video: {ref}")
    return real


# -- URLs the clients follow --------------------------------------------------------------------
def _span_params(start: float | None, end: float | None, n: int | None = None, i: int | None = None) -> str:
    params = {"start": f"{start:g}" if start else None, "end": f"{end:g}" if end is not None else None,
              "n": n, "i": i}
    text = urlencode({k: v for k, v in params.items() if v is not None})
    return "?" + text if text else ""


def media_url(ref: str) -> str:
    return "/media/" + quote(ref)


def strip_url(ref: str, start: float | None, end: float | None, n: int = 8) -> str:
    return "/strips/" + quote(ref) + _span_params(start, end, n)


# -- the app ------------------------------------------------------------------------------------
def create_app(index_dir: Path, reranker: str | None = None, hosts: Sequence[str] = LOOPBACK) -> FastAPI:
    """The API and UI over the index in ``index_dir``; ``reranker`` is what ``rerank: true`` uses; only requests
    naming one of ``hosts`` are answered (see guards.py)."""
    engine = Engine(Path(index_dir))
    if not engine.has_index:
        raise NoIndexError(f"no index at {index_dir}: run `convis index FOLDER` first")
    uploads = upload_folder()
    state = ServerState(engine, reranker, uploads)

    @asynccontextmanager
    async def lifespan(_app):
        yield
        shutil.rmtree(uploads, ignore_errors=True)  # uploads are scratch anchors, not data to keep

    # docs_url/redoc_url off: FastAPI's doc pages load their scripts from a CDN; /openapi.json stays
    app = FastAPI(title="convis", version="0.1.0", lifespan=lifespan, docs_url=None, redoc_url=None,
                  description="Concept-conditioned video retrieval over one index: query by concept, compare "
                              "pairs, browse thumbnails and media.")
    app.state.convis = state
    guard(app, hosts, "/uploads", MAX_UPLOAD_BYTES)
    _add_error_handlers(app)
    _add_routes(app, state)
    return app


def _error(status: int, message: str, headers: dict | None = None, **extra) -> JSONResponse:
    return JSONResponse({"error": message, **extra}, status_code=status, headers=headers)


def _add_error_handlers(app: FastAPI) -> None:
    async def busy(_request, exc):
        message = str(exc) if "retry" in str(exc) else f"{exc}; retry in a few seconds"
        return _error(503, message, {"Retry-After": str(RETRY_SECONDS)}, retry_after=RETRY_SECONDS)

    async def bad_request(_request, exc):
        return _error(400, one_line(exc, None))

    async def model_failed(_request, exc):
        return _error(500, f"model unavailable: {one_line(exc, None)}")

    app.add_exception_handler(ApiError, lambda _r, exc: _error(exc.status, str(exc)))
    app.add_exception_handler(CloseToConcept, lambda _r, exc: _error(400, exc.saying(FREE_TEXT_OPT_IN)))
    app.add_exception_handler(CatalogBusy, busy)
    app.add_exception_handler(NoIndexError, lambda _r, exc: _error(503, str(exc)))
    for kind in (AnchorError, ConceptError, SignalError, DecodeError):
        app.add_exception_handler(kind, bad_request)
    for kind in (ModelUnavailableError, RerankerError, UnknownModelError):
        app.add_exception_handler(kind, model_failed)


def _add_routes(app: FastAPI, state: ServerState) -> None:
    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    def index_page():
        return HTMLResponse(ui_page())

    @app.get("/health", summary="Is the index readable, and what is in it")
    def health():
        root = state.root
        with state.using_engine() as engine:
            info = engine.info()  # opens the catalog: busy or missing shows here
            notices = list(engine.notices)
        return {"status": "ok", "root": str(root), "index_dir": info["index_dir"],
                "files_ok": info["files_ok"], "files_failed": info["files_failed"], "units": info["units"],
                "indexers": [row["indexer"] for row in info["indexers"]], "reranker": state.reranker,
                "notices": notices}

    @app.get("/videos", summary="Indexed files and their retrievable units")
    def videos():
        root = state.root
        with state.using_engine() as engine:
            return {"root": str(root), "files": list_videos(engine), "notices": list(engine.notices)}

    @app.post("/uploads", summary="Upload an anchor clip; returns its ref for /query")
    def upload(file: UploadFile = File(...)):
        return save_upload(state.uploads, file)

    @app.post("/query", summary="Rank indexed clips by similarity to the anchor, per concept")
    def query(body: QueryIn):
        return run_query(state, body)

    @app.post("/compare", summary="Per-concept similarity of the anchor and one indexed clip")
    def compare(body: CompareIn):
        return run_compare(state, body)

    @app.get("/strips/{ref:path}", summary="Timestamps and thumbnail URLs of a clip's frame strip")
    def strip_frames(ref: str, start: float = Query(0.0, ge=0), end: float | None = Query(None, gt=0),
                     n: int = Query(8, ge=1, le=32)):
        thumbs = state.thumbs(state.resolve(ref), start, end, n)
        frames = [{"time": round(t.time, 3), "width": t.width, "height": t.height,
                   "src": "/thumbs/" + quote(ref) + _span_params(start, end, n, i)} for i, t in enumerate(thumbs)]
        return {"ref": ref, "start": start, "end": end, "frames": frames}

    @app.get("/thumbs/{ref:path}", summary="One JPEG frame of a clip's strip",
             responses={200: {"content": {"image/jpeg": {}}}})
    def thumb(ref: str, i: int = Query(0, ge=0), start: float = Query(0.0, ge=0),
              end: float | None = Query(None, gt=0), n: int = Query(8, ge=1, le=32)):
        thumbs = state.thumbs(state.resolve(ref), start, end, n)
        if i >= len(thumbs):
            raise ApiError(404, f"the strip has {len(thumbs)} frames")
        return Response(thumbs[i].jpeg, media_type="image/jpeg", headers={"Cache-Control": "private, max-age=300"})

    @app.get("/media/{ref:path}", summary="The video file itself (range requests supported)",
             response_class=FileResponse)
    def media(ref: str):
        return FileResponse(state.resolve(ref))


# -- endpoint bodies ----------------------------------------------------------------------------
def list_videos(engine: Engine) -> list[dict]:
    """Every file the index knows (the engine reads the last published snapshot while an index run writes)."""
    return [{"path": f.path, "status": f.status, "error": f.error, "duration": f.duration, "width": f.width,
             "height": f.height, "media": media_url(f.path) if f.status == "ok" else None,
             "units": [{"segment": seg, "start": round(start, 3), "end": round(end, 3),
                        "strip": strip_url(f.path, start, end)} for seg, start, end in f.units]}
            for f in engine.files()]


def save_upload(folder: Path, upload: UploadFile) -> dict:
    """Store an uploaded clip under its content hash (the same clip twice is one file)."""
    suffix = Path(upload.filename or "").suffix.lower()
    if suffix not in VIDEO_EXTENSIONS:
        raise ApiError(400, f"not a video file name: {upload.filename!r} "
                            f"(expected one of {', '.join(sorted(VIDEO_EXTENSIONS))})")
    digest, size = hashlib.blake2b(digest_size=16), 0
    with tempfile.NamedTemporaryFile(dir=folder, delete=False) as tmp:
        while block := upload.file.read(1 << 20):
            size += len(block)
            if size > MAX_UPLOAD_BYTES:
                Path(tmp.name).unlink()
                raise ApiError(413, f"upload larger than {MAX_UPLOAD_BYTES >> 20} MiB")
            digest.update(block)
            tmp.write(block)
    name = digest.hexdigest() + suffix
    Path(tmp.name).replace(folder / name)
    ref = f"{UPLOADS}/{name}"
    return {"anchor": ref, "name": upload.filename, "size": size, "media": media_url(ref),
            "strip": strip_url(ref, None, None)}


def run_query(state: ServerState, body: QueryIn) -> dict:
    anchor = state.resolve(body.anchor)
    with state.using_engine() as engine:
        result = engine.query(anchor, parsed_concepts(body.concepts, body.free_text), body.k, body.start, body.end,
                              reranker=state.reranker_for(body.rerank), rerank_top=body.rerank_top,
                              mode=body.mode, symmetric=body.symmetric)
    data = result.as_dict()
    # the anchor as the client named it: relative to the root, uploads included (they live outside it)
    data.update(anchor=body.anchor, anchor_media=media_url(body.anchor),
                anchor_strip=strip_url(body.anchor, body.start, body.end))
    for hit in data["hits"]:
        hit.update(media=media_url(hit["path"]), strip=strip_url(hit["path"], hit["start"], hit["end"]))
    return data


def run_compare(state: ServerState, body: CompareIn) -> dict:
    a, b = state.resolve(body.a), state.resolve(body.b)
    concepts = parsed_concepts(body.concepts, body.free_text)
    reranker = state.reranker_for(body.rerank)
    with state.using_engine() as engine:
        # by signals: the scores a query for the anchor gives b, exactly what the gallery showed
        data = engine.compare(a, b, concepts, reranker, body.mode, body.symmetric, a_span=(body.a_start, body.a_end),
                              b_start=body.b_start).as_dict()
    data.update(a=body.a, b=body.b, a_media=media_url(body.a), b_media=media_url(body.b),
                a_strip=strip_url(body.a, body.a_start, body.a_end),
                b_strip=strip_url(body.b, data["b_start"], data["b_end"]))
    return data


# -- running it ---------------------------------------------------------------------------------
def make_server(index_dir: Path, host: str = "127.0.0.1", port: int = 8000, reranker: str | None = None,
                log_level: str = "info", extra_hosts: Sequence[str] = ()):
    """A uvicorn server for the app (``.run()`` blocks; tests run it in a thread)."""
    import uvicorn  # uvicorn: only a running server needs it, not the app (tests use the app alone)

    app = create_app(Path(index_dir), reranker, allowed_hosts(host, extra_hosts))
    return uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level=log_level))


def serve(index_dir: Path, host: str = "127.0.0.1", port: int = 8000, reranker: str | None = None,
          extra_hosts: Sequence[str] = ()) -> None:
    """Serve the UI and API until interrupted; localhost only unless ``host`` says otherwise; answering only
    requests for the loopback names, ``host`` and ``extra_hosts``."""
    make_server(index_dir, host, port, reranker, extra_hosts=extra_hosts).run()


# -- the web UI: one page, vanilla JS, no external resources ------------------------------------
@functools.cache
def ui_page() -> str:
    """``ui/index.html`` with its stylesheets (the gallery's, then the app's) and script inlined: one
    self-contained page, as the gallery is."""
    folder = resources.files("retrieval.serve") / "ui"

    def read(name: str) -> str:
        return (folder / name).read_text(encoding="utf-8")

    page = read("index.html").replace("/* gallery.css */\n/* app.css */", STYLE + "\n" + read("app.css"))
    return page.replace("/* app.js */", "\n" + read("app.js"))
