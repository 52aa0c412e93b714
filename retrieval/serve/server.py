"""``convis serve``: a JSON API and a small web UI over one index.

Clips are named by *refs*: a path relative to the index root (``campus_01.mp4``), or
``.uploads/<hash>.<ext>`` for an anchor uploaded through ``POST /uploads``.  Indexing never
takes hidden files, so the ``.uploads/`` namespace cannot collide with an indexed path.

Only files inside the index root are ever read or served: refs with ``..``, hidden parts or
absolute paths are refused, and a ref whose real path (symlinks resolved) leaves the root is
forbidden.  The catalog is opened read-only by each request that reads it: while a concurrent ``convis index``
holds it, requests read the run's last published snapshot, and before there is one they get a
503 with a retry hint instead of a crash.

Under load: heavy requests (the engine's verbs, decoding, collection pages) run in a bounded pool of workers with a
bounded queue, and past it are answered 503 with Retry-After (workers.py); /health answers on the event loop from
the index's summary the server keeps, and /videos from the listing it keeps while the index stays as it is
(health.py), so neither waits for the requests being answered.

``/openapi.json`` describes every answer: each route declares its error statuses, all with the same
``{"error": "..."}`` body (request validation's 422 included), and its links which answer leads to which request
(links.py); a JSON body is taken only as its schema says (``0`` is not a boolean: see errors.RequestBody); inputs
are bounded (ref length, concept count, strip size) so no request can hold the engine for long; and no answer
names an absolute path of the server's.
Uploads are bounded too: see uploads.py.
"""

from __future__ import annotations

import dataclasses
import functools
import re
import shutil
import tempfile
import threading
from collections import OrderedDict
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Annotated, Callable, Iterator, Literal, Sequence
from urllib.parse import quote, urlencode

from fastapi import FastAPI, File, Query, UploadFile
from fastapi import Path as PathParam
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse, Response
from pydantic import Field, StringConstraints
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException

from indexers.factory import has_text_tower
from retrieval.core.concepts import Concept, parse_concepts
from retrieval.core.defaults import (
    CANT_TELL_MARGIN,
    DEFAULT_K,
    MAX_CONCEPT_WEIGHT,
    MAX_K,
    MAX_UPLOAD_BYTES,
    MIN_CONCEPT_WEIGHT,
    UPLOAD_QUOTA_BYTES,
)
from retrieval.core.errors import ConvisError, one_line
from retrieval.engine import (
    CompareRequest,
    DiffRequest,
    DupesRequest,
    Engine,
    NoIndexError,
    QueryRequest,
    SearchRequest,
)
from retrieval.media.preview import PreviewError, Previews
from retrieval.media.scan import VIDEO_EXTENSIONS
from retrieval.media.video_decoder import VideoDecoder
from retrieval.search.compose import Change
from retrieval.search.text_query import MAX_TEXT_CHARS
from retrieval.serve.errors import (
    REF_PATTERN,
    ApiError,
    RequestBody,
    Whole,
    responses,
    validation_message,
    without_paths,
)
from retrieval.serve.evidence import evidence_routes
from retrieval.serve.gallery import THUMB_SHORT_SIDE, Thumb, strip, write_query_html
from retrieval.serve.guards import LOOPBACK, MULTIPART_SLACK, allowed_hosts, guard, upload_folder
from retrieval.serve.health import KeptIndex, KeptListing
from retrieval.serve.links import answer_links, link
from retrieval.serve.playback import PREVIEWS_DIRNAME, PlaybackLinks, media_url
from retrieval.serve.transcript import transcript_routes
from retrieval.serve.uploads import UPLOAD_REF, UPLOADS, UploadStore
from retrieval.serve.warmup import Warmup
from retrieval.serve.workers import Workers
from retrieval.serve.writes import write_routes
from retrieval.store.catalog import FileListing
from retrieval.store.where import MAX_CONDITIONS, MAX_VALUE_CHARS, OPERATORS

VIDEOS = "videos"  # the listing's answer /videos sends (see health.py)
REMOVED = "removed"  # the files taken out of the index, read once for each state of it like the listing
STRIP_CACHE_SIZE = 256  # strips of ~8 small JPEGs: a few MB at most
# bounds on what one request may ask: a path no filesystem has, or thousands of concepts holding the engine
MAX_REF_CHARS = 1024
MAX_CONCEPTS = 64
MAX_CONCEPT_CHARS = 200
MAX_PAGE = 200  # units on one page of the collection: each is a thumbnail the browser loads
COLLECTION_STATUSES = ("ok", "failed", "unavailable", "removed")
OFFLINE = "its folder was offline at the last index run; vectors kept"  # why an unavailable file is listed
MAX_SEARCH_K = 100  # a page of results: each one is a strip and a player in the web UI
MAX_GALLERY = 50  # results in an exported gallery: each embeds a clip made with ffmpeg
# what one /diff may ask: each statement is a model call (two when symmetric), as in `convis diff`
MAX_DIFF_STATEMENTS = 20
MAX_DIFF_PROPOSALS = 10
MAX_DIFF_ACTION_CHARS = 1000  # VidDiff's action descriptions are a few hundred characters at most
MAX_DIFF_STATEMENT_CHARS = 500
NO_DIFF_MODEL = ("this server has no LMM to say what differs: start it with `convis serve --reranker NAME` (e.g. "
                 "qwen2.5-vl)")
# warming waits this long after the server listens: importing torch holds the interpreter for a few tenths of a
# second at a time, which would slow the answers a client asks first (the page, /health)
WARM_AFTER_S = 0.5

Ref = Annotated[str, StringConstraints(min_length=1, max_length=MAX_REF_CHARS, pattern=REF_PATTERN)]
ConceptText = Annotated[str, StringConstraints(min_length=1, max_length=MAX_CONCEPT_CHARS)]
Seconds = Annotated[float, Field(allow_inf_nan=False)]


# -- request bodies -----------------------------------------------------------------------------
# a character that is not blank to str.strip() (whose blanks are str.isspace()'s), spelt out: a schema's "\S"
# is ECMA-262's, which takes U+001C-U+001F and U+0085 for text and U+FEFF for a blank
NOT_BLANK = r"[^\t\n\v\f\r\x1c-\x1f \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]"
FREE_TEXT_OPT_IN = 'send "free_text": true, or tick "free text" in the web UI,'
FREE_TEXT_HELP = ("Take every concept name as written: a name close to a ConViS concept (e.g. 'locaton') is "
                  "otherwise refused as a likely typo.")


WHERE_HELP = ("Filters, ANDed, each 'FIELD OP VALUE' as `convis query --where` takes them (operators = != < <= > >= in "
              "glob has; GET /fields lists the fields): only the units of matching files are ranked.")
WhereText = Annotated[str, StringConstraints(min_length=1, max_length=MAX_VALUE_CHARS + 100)]


class ConceptIn(RequestBody):
    name: ConceptText = Field(..., examples=["location", "main-action", "camera angle"])
    weight: float = Field(1.0, ge=MIN_CONCEPT_WEIGHT, le=MAX_CONCEPT_WEIGHT, allow_inf_nan=False)


class QueryIn(RequestBody):
    # at least one concept, or a change (the schema says so too, so clients and checkers can know it)
    model_config = {"json_schema_extra": {"anyOf": [{"required": ["change"], "properties": {"change": {
                                                        "type": "string", "pattern": NOT_BLANK}}},
                                                    {"required": ["concepts"], "properties": {"concepts": {
                                                        "minItems": 1}}}]}}
    anchor: Ref = Field(..., description="Indexed path relative to the index root, or an upload ref.",
                        examples=["campus_01.mp4"])
    concepts: list[ConceptIn | ConceptText] = Field(
        [], max_length=MAX_CONCEPTS, description="Concepts with weights, or strings such as 'location=0.7'; at "
                                                 "least one unless `change` is given (then: the five ConViS ones).")
    change: str | None = Field(None, max_length=MAX_TEXT_CHARS, description="Clips like the anchor but changed as "
                               "this says, e.g. 'a cup instead of a box' (a composed query).")
    change_weight: float = Field(1.0, gt=0, le=100, description="How much matching `change` counts against staying "
                                                                "like the anchor.")
    most_different: bool = Field(False, description="Rank the clips least like the anchor under the concepts first "
                                                    "(the same scores, ascending).")
    k: Whole = Field(DEFAULT_K, ge=1, le=MAX_K)
    start: Seconds | None = Field(None, ge=0, description="Use only the anchor from this second.")
    end: Seconds | None = Field(None, gt=0, description="Use only the anchor up to this second.")
    rerank: bool = Field(False, description="Rescore the top candidates with the server's --reranker.")
    rerank_top: Whole = Field(20, ge=1, le=500)
    mode: Literal["expected", "greedy"] = "expected"
    symmetric: bool = False
    free_text: bool = Field(False, description=FREE_TEXT_HELP)
    where: list[WhereText] = Field([], max_length=MAX_CONDITIONS, description=WHERE_HELP,
                                   examples=[["duration > 10", "tags has goal"]])

    def to_request(self, resolve: Callable[[str], Path], reranker_for: Callable[[bool], str | None]) -> QueryRequest:
        """The query this body asks, its anchor's ref resolved to a file (``resolve``) and its ``rerank`` to the
        server's reranker (``reranker_for``); the request checks the rest."""
        if not self.concepts and not (self.change or "").strip():
            raise HTTPException(422, "give at least one concept, or a change")
        anchor = resolve(self.anchor)
        concepts = parsed_concepts(self.concepts, self.free_text) if self.concepts else ()
        return QueryRequest(anchor, concepts, self.k, self.start, self.end, reranker=reranker_for(self.rerank),
                            rerank_top=self.rerank_top, mode=self.mode, symmetric=self.symmetric,
                            change=None if self.change is None else Change(self.change, self.change_weight),
                            most_different=self.most_different, where=self.where)


class CompareIn(RequestBody):
    a: Ref = Field(..., description="The anchor: indexed path or upload ref.", examples=["campus_01.mp4"])
    b: Ref = Field(..., description="An indexed path.", examples=["campus_02.mp4"])
    concepts: list[ConceptIn | ConceptText] = Field(..., min_length=1, max_length=MAX_CONCEPTS)
    a_start: Seconds | None = Field(None, ge=0)
    a_end: Seconds | None = Field(None, gt=0)
    b_start: Seconds | None = Field(None, ge=0, description="Which unit of a segmented b (its start second).")
    rerank: bool = Field(False, description="Ask the server's --reranker (whole files) instead of the index's "
                                            "signals; either way scores are on the 0-1 scale.")
    mode: Literal["expected", "greedy"] = "expected"
    symmetric: bool = False
    free_text: bool = Field(False, description=FREE_TEXT_HELP)
    where: list[WhereText] = Field([], max_length=MAX_CONDITIONS, description=WHERE_HELP + " b is ranked among the "
                                   "units they keep (the index's signals only).")

    def to_request(self, resolve: Callable[[str], Path], reranker_for: Callable[[bool], str | None]
                   ) -> CompareRequest:
        """The comparison this body asks (see ``QueryIn.to_request``)."""
        a, b = resolve(self.a), resolve(self.b)
        return CompareRequest(a, b, parsed_concepts(self.concepts, self.free_text), reranker_for(self.rerank),
                              self.mode, self.symmetric, a_span=(self.a_start, self.a_end), b_start=self.b_start,
                              where=self.where)


class DiffIn(RequestBody):
    a: Ref = Field(..., description="The anchor: indexed path or upload ref.", examples=["box.mp4"])
    b: Ref = Field(..., description="An indexed path.", examples=["cup.mp4"])
    a_start: Seconds | None = Field(None, ge=0)
    a_end: Seconds | None = Field(None, gt=0)
    b_start: Seconds | None = Field(None, ge=0, description="b's span, e.g. the compared unit's (`/compare`'s "
                                                            "`b_start`, `b_end`).")
    b_end: Seconds | None = Field(None, gt=0)
    action: str = Field(..., min_length=1, max_length=MAX_DIFF_ACTION_CHARS, pattern=NOT_BLANK,
                        description="What the clips show, e.g. 'a hand moving a box' (VidDiff's action).")
    statements: list[Annotated[str, StringConstraints(min_length=1, max_length=MAX_DIFF_STATEMENT_CHARS,
                                                      pattern=NOT_BLANK)]] = Field(
        [], max_length=MAX_DIFF_STATEMENTS, description="Differences to place ('the box is larger'): the LMM says "
                                                        "which clip each is more true of. None: it proposes them.")
    most: Whole = Field(3, ge=1, le=MAX_DIFF_PROPOSALS, description="Without statements: how many differences the "
                                                                   "LMM may propose (each then placed the same way).")
    mode: Literal["expected", "greedy"] = "expected"
    symmetric: bool = False

    def to_request(self, resolve: Callable[[str], Path], reranker: str) -> DiffRequest:
        """What ``convis diff A B`` asks for this pair and their spans, of the server's ``reranker``."""
        given = {str(i): text for i, text in enumerate(self.statements)} or None
        return DiffRequest(resolve(self.a), resolve(self.b), action=self.action, statements=given,
                           most=None if given else self.most, reranker=reranker, mode=self.mode,
                           symmetric=self.symmetric, a_span=(self.a_start or 0.0, self.a_end),
                           b_span=(self.b_start or 0.0, self.b_end))


class ShownUnit(RequestBody):
    path: Ref
    start: Seconds = Field(..., ge=0, description="The unit's start second, as the result gives it.")


class GalleryIn(QueryIn):
    shown: list[ShownUnit] | None = Field(
        None, max_length=MAX_K, description="Only these results (by path and start), in their ranks: the ones a "
                                            "client shows after its own filters; none: every result.")


def parsed_concepts(concepts: list[ConceptIn | str], free_text: bool) -> list[Concept]:
    return parse_concepts([c if isinstance(c, str) else f"{c.name}={c.weight}" for c in concepts], free_text)


# -- state shared by the requests ---------------------------------------------------------------
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
        return without_paths(message, named)

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
    if not ref or len(ref) > MAX_REF_CHARS or "\x00" in ref or "\\" in ref:
        raise ApiError(400, f"not a valid path: {ref!r}")
    if ref.startswith("/") or re.match(r"[A-Za-z]:", ref):
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


# -- URLs the clients follow --------------------------------------------------------------------
def _span_params(start: float | None, end: float | None, n: int | None = None, i: int | None = None) -> str:
    params = {"start": f"{start:g}" if start else None, "end": f"{end:g}" if end is not None else None,
              "n": n, "i": i}
    text = urlencode({k: v for k, v in params.items() if v is not None})
    return "?" + text if text else ""


def strip_url(ref: str, start: float | None, end: float | None, n: int = 8) -> str:
    return "/strips/" + quote(ref) + _span_params(start, end, n)


def poster_url(ref: str, start: float | None, end: float | None) -> str:
    """A unit's poster: the one frame a strip of one samples, its middle."""
    return "/thumbs/" + quote(ref) + _span_params(start, end, 1, 0)


# -- the app ------------------------------------------------------------------------------------
def create_app(index_dir: Path, reranker: str | None = None, hosts: Sequence[str] = LOOPBACK,
               max_upload: int = MAX_UPLOAD_BYTES, upload_quota: int = UPLOAD_QUOTA_BYTES,
               allow_writes: bool = False, workers: int | None = None, queue: int | None = None) -> FastAPI:
    """The API and UI over the index in ``index_dir``; ``reranker`` is what ``rerank: true`` uses; only requests
    naming one of ``hosts`` are answered (see guards.py); uploads are limited to ``max_upload`` bytes each and
    ``upload_quota`` bytes together (see uploads.py); heavy requests run ``workers`` at a time with ``queue`` more
    waiting (default: one a core and at least two, 32 waiting a worker; see workers.py)."""
    engine = Engine(Path(index_dir))
    if not engine.has_index:
        raise NoIndexError(f"no index at {index_dir}: run `convis index FOLDER` first")
    decoder = VideoDecoder(short_side=THUMB_SHORT_SIDE)
    uploads = UploadStore(upload_folder(), max_upload, upload_quota, decoder)
    state = ServerState(engine, reranker, uploads, decoder, index_dir=Path(index_dir), allow_writes=allow_writes,
                        links=PlaybackLinks(Previews(Path(index_dir) / PREVIEWS_DIRNAME)), warmup=Warmup(engine),
                        workers=Workers(workers, queue))
    state.listing = KeptListing(Path(index_dir), engine.files)
    state.kept = KeptIndex(Path(index_dir), functools.partial(index_summary, state),
                           then=functools.partial(state.listing.answer, VIDEOS, functools.partial(videos_body, state)))

    @asynccontextmanager
    async def lifespan(_app):
        state.kept.refresh()  # before the first request: /health answers from it at once
        state.kept.start()
        yield
        state.kept.close()
        state.workers.close()
        shutil.rmtree(uploads.folder, ignore_errors=True)  # uploads are scratch anchors, not data to keep

    # docs_url/redoc_url off: FastAPI's doc pages load their scripts from a CDN; /openapi.json stays
    app = FastAPI(title="convis", version="0.1.0", lifespan=lifespan, docs_url=None, redoc_url=None,
                  description="Concept-conditioned video retrieval over one index: query by concept, compare "
                              "pairs, browse thumbnails and media.")
    app.state.convis = state
    guard(app, hosts, "/uploads", max_upload)
    _add_error_handlers(app, state)
    _add_routes(app, state)
    app.include_router(evidence_routes(state))
    app.include_router(transcript_routes(state))
    app.include_router(write_routes(state))
    return app


def _add_error_handlers(app: FastAPI, state: ServerState) -> None:
    def error(status: int, message: str, headers: dict | None = None, **extra) -> JSONResponse:
        return JSONResponse({"error": state.public(message), **extra}, status_code=status, headers=headers)

    async def refused(_request, exc: ConvisError):  # each says what it means: its status, its line, when to retry
        message = exc.public({"free_text": FREE_TEXT_OPT_IN})
        if exc.label:
            message = f"{exc.label}: {message}"
        if exc.retry_after is None:
            return error(exc.http_status, message)
        if "retry" not in message:
            message += "; retry in a few seconds"
        return error(exc.http_status, message, {"Retry-After": str(exc.retry_after)}, retry_after=exc.retry_after)

    async def http_error(_request, exc: HTTPException):  # unknown routes, methods, bodies over the limit
        return error(exc.status_code, str(exc.detail), getattr(exc, "headers", None))

    async def invalid(_request, exc: RequestValidationError):
        return error(422, validation_message(exc.errors()))

    async def unexpected(_request, exc):  # the client gets one line; the traceback goes to the server's log
        return error(500, f"internal error: {one_line(exc, None)}")

    app.add_exception_handler(ConvisError, refused)
    app.add_exception_handler(HTTPException, http_error)
    app.add_exception_handler(RequestValidationError, invalid)
    app.add_exception_handler(Exception, unexpected)


REF_PATH = PathParam(..., max_length=MAX_REF_CHARS, pattern=REF_PATTERN,
                     description="Indexed path relative to the index root, or an upload ref.")
START = Query(0.0, ge=0, allow_inf_nan=False)
END = Query(None, gt=0, allow_inf_nan=False)
STRIP_N = Query(8, ge=1, le=32)
FORCE_PREVIEW = Query(False, description="Make the preview even of a file judged playable (the browser failed to "
                      "decode it); the file is linked to its preview from then on.")
SEARCH_TEXT = Query(..., min_length=1, max_length=MAX_TEXT_CHARS, description="What to look for, in words.",
                    examples=["a hand holding a cup"])
SEARCH_K = Query(DEFAULT_K, ge=1, le=MAX_SEARCH_K, description="How many results.")
FOLDER = Query(None, max_length=MAX_REF_CHARS, description="Only files in this folder (relative to the root; '' "
               "for the root's own files; subfolders included).")
NAME_FILTER = Query(None, max_length=200, description="Only files whose path contains this text (any case).")
STATUS = Query("ok", description="ok: the indexed units; failed, unavailable: those files; removed: the files "
               "taken out of the index (`convis remove`), each with when (`removed_at`) and whether its vectors are "
               "kept (`kept`: POST /files/{ref}/restore puts it back searchable at once).")
SEARCH_WHERE = Query([], max_length=MAX_CONDITIONS, description=WHERE_HELP, examples=[["duration > 10"]])
DUPES_LEVEL = Query("file", pattern="^(file|unit)$", description="file: copies of whole files (a trimmed copy "
                    "counts when its matching units cover most of it); unit: single units.")
DUPES_THRESHOLD = Query(None, gt=0.5, le=1.0, allow_inf_nan=False, description="Similarity from which two units are "
                        "copies (default: read from the index's background, as `convis dupes --auto`).")
DUPES_INDEXER = Query(None, min_length=1, max_length=200, description="Whose vectors to compare (default: "
                      "fingerprint when indexed, else the first visual indexer).")
DUPES_KEEP = Query("longest", pattern="^(longest|resolution|oldest)$", description="Which member of a group to keep.")
SEARCH_CONCEPT = Query(None, min_length=1, max_length=200, description="Search only this concept's descriptions "
                       "(written at index time), e.g. location.", examples=["location"])
SEARCH_MODE = Query(None, pattern="^(vector|keyword|hybrid)$", description="vector: the text towers' similarity; "
                    "keyword: BM25 over each unit's stored text; hybrid: both, fused by reciprocal rank fusion "
                    "(k = 60). Default: hybrid when the index holds captions or descriptions, else vector.",
                    examples=["hybrid"])


# where an answer leads: the values a client passes on (see links.py)
LISTED = "$response.body#/files/0/path"
ANCHOR = "$response.body#/anchor"  # an upload's ref, or a query's anchor
FIRST_HIT = "$response.body#/hits/0"


def videos_links(writes: bool) -> dict:
    found = {"strip": link("GET", "/strips/{ref}", {"ref": LISTED}),
             "media": link("GET", "/media/{ref}", {"ref": LISTED}),
             "evidence": link("GET", "/evidence/{ref}", {"ref": LISTED}),
             "query": link("POST", "/query", body={"anchor": LISTED})}
    if writes:
        found["remove"] = link("DELETE", "/files/{ref}", {"ref": LISTED})
    return answer_links(200, **found)


def upload_links(writes: bool) -> dict:
    found = {"query": link("POST", "/query", body={"anchor": ANCHOR}),
             "strip": link("GET", "/strips/{ref}", {"ref": ANCHOR})}
    if writes:
        found["add"] = link("POST", "/index/files", body={"uploads": [ANCHOR]})
    return answer_links(200, **found)


QUERY_LINKS = answer_links(200, compare=link("POST", "/compare", body={"a": ANCHOR, "b": f"{FIRST_HIT}/path"}),
                           evidence=link("GET", "/evidence/{ref}", {"ref": f"{FIRST_HIT}/path",
                                                                    "segment": f"{FIRST_HIT}/segment"}))


def _add_routes(app: FastAPI, state: ServerState) -> None:
    _add_index_routes(app, state)
    _add_asking_routes(app, state)
    _add_media_routes(app, state)


def _add_index_routes(app: FastAPI, state: ServerState) -> None:
    """The UI's files, and what the index holds."""
    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    def index_page():
        return HTMLResponse(ui_file("index.html"), headers={"Cache-Control": "no-cache"})

    @app.get("/ui/{name}", include_in_schema=False)
    def ui_asset(name: str):
        if name not in UI_FILES:
            raise ApiError(404, f"no such file: {name}")
        return Response(ui_file(name), media_type=UI_FILES[name], headers={"Cache-Control": "no-cache"})

    # answered on the event loop from what the server keeps: a probe never waits for the requests being answered
    @app.get("/health", summary="Is the index readable, and what is in it (as last read: `state_age_s` says how "
             "long ago it was last found current)", responses=responses(503))
    async def health():
        reading, age = state.kept.latest()
        if reading is None:  # an app used without its start-up (no lifespan): read once, then keep it current
            reading, age = await run_in_threadpool(state.kept.refresh), 0.0
            state.kept.start()
        if reading.error is not None:
            raise reading.error  # busy or missing: the same answer a read would give now
        return {**reading.summary, "reranker": state.reranker, **state.warmup.status(),
                "allow_writes": state.allow_writes, "state_age_s": round(age, 3),
                "notices": [state.public(notice) for notice in [*reading.notices, *state.warmup.notices]]}

    @app.get("/videos", summary="Indexed files and their retrievable units",
             responses={**videos_links(state.allow_writes), **responses(503)})
    async def videos():
        # the same bytes for every request while the index stays as it is; after a change, one read of the listing
        # (the requests asking meanwhile wait for it), never queued behind the workers' queries
        body = state.listing.ready(VIDEOS) or await run_in_threadpool(state.listing.answer, VIDEOS,
                                                                      functools.partial(videos_body, state))
        return Response(body, media_type="application/json")

    @app.get("/collection", summary="A page of the indexed units (or of the failed, unavailable or removed files: "
             "those taken out of the index, with when), filtered by folder, status and name",
             responses=responses(422, 503))
    async def collection(folder: str | None = FOLDER,
                         status: Literal["ok", "failed", "unavailable", "removed"] = STATUS,
                         name: str | None = NAME_FILTER, offset: int = Query(0, ge=0),
                         limit: int = Query(60, ge=1, le=MAX_PAGE)):
        return await state.answer(collection_answer, state, folder, status, name, offset, limit)


def _add_asking_routes(app: FastAPI, state: ServerState) -> None:
    """Uploading an anchor, and the verbs: query (and its gallery), search, compare."""
    # the body limit is enforced while the request streams: no more than the limit is ever read or spooled
    @app.post("/uploads", summary="Upload an anchor clip; returns its ref for /query",
              responses={**upload_links(state.allow_writes), **responses(400, 403, 413, 415, 422, 503)},
              max_body_size=state.uploads.max_bytes + MULTIPART_SLACK)
    async def upload(file: UploadFile = File(...)):
        return await state.answer(upload_answer, state, file)  # the upload is decoded: is it a video?

    @app.post("/query", summary="Rank indexed clips by similarity to the anchor, per concept",
              responses={**QUERY_LINKS, **responses(400, 403, 404, 422, 503)})
    async def query(body: QueryIn):
        return await state.answer(run_query, state, body)

    @app.post("/export/gallery", summary="The query's results as one self-contained HTML page (thumbnails and an "
              "H.264 clip of each result embedded)",
              responses={200: {"content": {"text/html": {}}}, **responses(400, 403, 404, 422, 503)})
    async def export_gallery(body: GalleryIn):
        name = re.sub(r"[^A-Za-z0-9._-]+", "_", Path(body.anchor).stem)[:60] or "results"  # a header is ASCII
        return HTMLResponse(await state.workers.run(gallery_page, state, body),
                            headers={"Content-Disposition": f'attachment; filename="convis-{name}.html"'})

    @app.get("/search", summary="Rank indexed clips by how well they match a text, with every signal that "
             "has a text tower", responses=responses(400, 422, 503))
    async def search(text: str = SEARCH_TEXT, k: int = SEARCH_K, concept: str | None = SEARCH_CONCEPT,
                     where: list[WhereText] = SEARCH_WHERE, mode: str | None = SEARCH_MODE):
        return await state.answer(run_search, state, text, k, concept, where, mode)

    @app.get("/dupes", summary="Near-duplicate files or units in groups, one to keep in each and the rest to drop "
             "(as `convis dupes --json`)", responses=responses(400, 422, 503))
    async def dupes(level: str = DUPES_LEVEL, threshold: float | None = DUPES_THRESHOLD,
                    indexer: str | None = DUPES_INDEXER, where: list[WhereText] = SEARCH_WHERE,
                    keep: str = DUPES_KEEP):
        return await state.answer(run_dupes, state, level, threshold, indexer, where, keep)

    @app.get("/fields", summary="The fields a `where` filter may name in this index (built-in, then the user's "
             "from `convis tag` and --metadata), each one's kind, and the operators", responses=responses(503))
    async def fields():
        return await state.answer(fields_answer, state)

    @app.post("/compare", summary="Per-concept similarity of the anchor and one indexed clip",
              responses=responses(400, 403, 404, 422, 503))
    async def compare(body: CompareIn):
        return await state.answer(run_compare, state, body)

    @app.post("/diff", summary="What differs between the anchor and one clip, and which clip each statement is "
              "more true of, asked of the server's --reranker (as `convis diff`; its weights are checked first)",
              responses=responses(400, 403, 404, 422, 503))
    async def diff(body: DiffIn):
        return await state.answer(run_diff, state, body)


def _add_media_routes(app: FastAPI, state: ServerState) -> None:
    """Frames, thumbnails and the clips themselves."""
    @app.get("/strips/{ref:path}", summary="Timestamps and thumbnail URLs of a clip's frame strip",
             responses=responses(400, 403, 404, 422, 503))
    async def strip_frames(ref: str = REF_PATH, start: float = START, end: float | None = END, n: int = STRIP_N):
        thumbs = await state.workers.run(state.strip_of, ref, start, end, n)
        frames = [{"time": round(t.time, 3), "width": t.width, "height": t.height,
                   "src": "/thumbs/" + quote(ref) + _span_params(start, end, n, i)} for i, t in enumerate(thumbs)]
        return {"ref": ref, "start": start, "end": end, "frames": frames}

    @app.get("/thumbs/{ref:path}", summary="One JPEG frame of a clip's strip (with n=1: the span's middle "
             "frame, a result's poster)",
             responses={200: {"content": {"image/jpeg": {}}}, **responses(400, 403, 404, 422, 503)})
    async def thumb(ref: str = REF_PATH, i: int = Query(0, ge=0, le=31), start: float = START,
                    end: float | None = END, n: int = STRIP_N):
        thumbs = await state.workers.run(state.strip_of, ref, start, end, n)
        if i >= len(thumbs):
            raise ApiError(404, f"the strip has {len(thumbs)} frames")
        return Response(thumbs[i].jpeg, media_type="image/jpeg", headers={"Cache-Control": "private, max-age=300"})

    @app.get("/media/{ref:path}", summary="The video file itself (range requests supported)",
             response_class=FileResponse, responses=responses(400, 403, 404, 422, 503))
    def media(ref: str = REF_PATH):
        return FileResponse(state.resolve(ref))

    @app.get("/previews/{ref:path}", summary="The clip as the browser can play it: the file itself, or an H.264 "
             "preview made with ffmpeg on the first request and kept in the index (`force`: whatever the file is)",
             response_class=FileResponse,
             responses=responses(400, 403, 404, 422, 503))
    def preview(ref: str = REF_PATH, force: bool = FORCE_PREVIEW):
        try:
            return FileResponse(state.links.playable_file(state.resolve(ref), force), media_type="video/mp4")
        except PreviewError as exc:
            raise ApiError(503, f"cannot make a preview of {ref}: {exc}") from None


def text_search(indexers: list[dict]) -> bool:
    """Whether a signal of the index reads text: captions, or a family whose registry card has a text tower."""
    return any(row["kind"] == "text" for row in indexers) or any(has_text_tower(row["indexer"]) for row in indexers)


def _shown_index_dir(index_dir: Path, root: Path) -> str:
    index_dir = index_dir.resolve()
    return str(index_dir.relative_to(root)) if index_dir.is_relative_to(root) else index_dir.name


# -- endpoint bodies ----------------------------------------------------------------------------
def index_summary(state: ServerState, notices: list[str]) -> dict:
    """What /health says of the index (read when it changes, see health.py); folders by name only: where the
    server keeps its files is not the client's business."""
    root = state.root
    info = state.engine.info(notices)  # opens the catalog: busy or missing shows here
    return {"status": "ok", "root": root.name, "index_dir": _shown_index_dir(Path(info["index_dir"]), root),
            "files_ok": info["files_ok"], "files_failed": info["files_failed"],
            "files_unavailable": info["files_unavailable"], "units": info["units"],
            "indexers": [row["indexer"] for row in info["indexers"]], "text_search": text_search(info["indexers"]),
            "segmentation": info["segmentation"]}


def videos_body(state: ServerState, files: Sequence[FileListing], notices: list[str]) -> bytes:
    """/videos' answer for the index's ``files``, as JSON."""
    return JSONResponse({"root": state.root.name, "files": list_videos(files, state.public),
                         "notices": [state.public(notice) for notice in notices]}).body


def collection_answer(state: ServerState, folder: str | None, status: str, name: str | None, offset: int,
                      limit: int) -> dict:
    notices: list[str] = []
    files = state.files(notices)
    removed = state.listing.answer(REMOVED, lambda _files, _notices: state.engine.removed())
    page = collection_page(files, folder, status, name, offset, limit, state.public, removed)
    for item in page["items"] if status == "ok" else ():
        item.update(state.playing(item["path"]))
    return {"root": state.root.name, **page, "notices": [state.public(notice) for notice in notices]}


def upload_answer(state: ServerState, file: UploadFile) -> dict:
    ref, size = state.uploads.save(file)
    return {"anchor": ref, "name": file.filename, "size": size, **state.playing(ref),
            "strip": strip_url(ref, None, None)}


def list_videos(files: Sequence[FileListing], public=str) -> list[dict]:
    """Every file the index knows, as /videos lists it; ``public`` rewrites error messages for the client."""
    return [{"path": f.path, "status": f.status, "error": public(f.error) if f.error else f.error,
             "duration": f.duration, "width": f.width, "height": f.height,
             "media": media_url(f.path) if f.status == "ok" else None,
             "units": [{"segment": seg, "start": round(start, 3), "end": round(end, 3),
                        "strip": strip_url(f.path, start, end)} for seg, start, end in f.units]}
            for f in files]


def folder_of(path: str) -> str:
    return path.rsplit("/", 1)[0] if "/" in path else ""


def in_folder(path: str, folder: str | None) -> bool:
    """``path`` is in ``folder`` or below it; None: any folder; "": the root's own files only."""
    here = folder_of(path)
    if folder is None or here == folder:
        return True
    return folder != "" and here.startswith(folder + "/")


def collection_page(files, folder: str | None, status: str, name: str | None, offset: int, limit: int,
                    public=str, removed=()) -> dict:
    """One page of the units of the ``status`` "ok" files (or of the "failed", "unavailable" or "removed" files), in
    path order; the counts and folders tell the client what the other pages and filters hold."""
    folders = sorted({folder_of(f.path) for f in files})

    def shown(path: str) -> bool:
        return in_folder(path, folder) and (not name or name.lower() in path.lower())

    inside = [f for f in files if shown(f.path)]
    counts = {kind: sum(f.status == kind for f in inside) for kind in COLLECTION_STATUSES}
    counts["removed"] = sum(shown(f.path) for f in removed)
    if status == "removed":
        items = [{"path": f.path, "folder": folder_of(f.path), "removed_at": f.removed_at, "kept": f.kept,
                  "units": f.units} for f in removed if shown(f.path)]
    elif status != "ok":
        items = [{"path": f.path, "error": public(f.error or "failed") if status == "failed" else OFFLINE}
                 for f in inside if f.status == status]
    else:
        items = [{"path": f.path, "folder": folder_of(f.path), "segment": seg, "start": round(start, 3),
                  "end": round(end, 3), "duration": f.duration, "units": len(f.units),
                  "strip": strip_url(f.path, start, end, 4)}
                 for f in inside if f.status == "ok" for seg, start, end in f.units]
    return {"folders": folders, "counts": counts, "total": len(items), "offset": offset, "limit": limit,
            "items": items[offset:offset + limit]}


def query_result(state: ServerState, body: QueryIn):
    """The engine's answer to ``body``, and the index's files (their durations)."""
    request = body.to_request(state.resolve, state.reranker_for)
    with state.asking(request.reranker):
        result = state.engine.query(request)
    return result, state.files()


def run_query(state: ServerState, body: QueryIn) -> dict:
    result, files = query_result(state, body)
    data = result.as_dict()
    # the anchor as the client named it: relative to the root, uploads included (they live outside it)
    playing = state.playing(body.anchor)
    data.update(root=state.root.name, anchor=body.anchor, anchor_name=state.anchor_name(body.anchor),
                anchor_media=playing["media"],
                anchor_playback=playing["playback"],
                anchor_strip=strip_url(body.anchor, body.start, body.end),
                notices=[state.public(n) for n in data["notices"]])
    linked(state, data["hits"], files)
    return data


def gallery_page(state: ServerState, body: GalleryIn) -> str:
    """The page ``convis query --html`` writes for this query, with every result's span embedded: a download
    plays wherever it is opened; ``body.shown``: only those results (what the client's filters left)."""
    if (body.k if body.shown is None else len(body.shown)) > MAX_GALLERY:
        raise ApiError(400, f"a gallery holds at most {MAX_GALLERY} results (each one's clip is embedded); ask for "
                            "fewer, or export CSV/JSON")
    result, _ = query_result(state, body)
    if body.shown is not None:
        shown = {(unit.path, round(unit.start, 3)) for unit in body.shown}
        result = dataclasses.replace(result, hits=[h for h in result.hits if (h.path, round(h.start, 3)) in shown])
    with tempfile.TemporaryDirectory(prefix="convis-gallery-") as folder:
        page = write_query_html(result, state.root, Path(folder) / "gallery.html", start=body.start, end=body.end,
                                previews=state.links.previews, embed_videos=True)
        # an uploaded anchor by its ref, not its folder; only these literal folders are replaced: the page is
        # mostly base64, which the general path scrubbing of error messages would cut apart
        return page.read_text(encoding="utf-8").replace(str(state.uploads.folder), UPLOADS)


def linked(state: ServerState, hits: list[dict], files) -> None:
    """Each hit with what the app shows it by: its media (or why none plays), its strip, its poster (the unit's
    middle frame) and its file's duration (a timeline)."""
    durations = {f.path: f.duration for f in files}
    for hit in hits:
        hit.update(**state.playing(hit["path"]), strip=strip_url(hit["path"], hit["start"], hit["end"]),
                   poster=poster_url(hit["path"], hit["start"], hit["end"]), duration=durations.get(hit["path"]))


def run_search(state: ServerState, text: str, k: int, concept: str | None = None, where: Sequence[str] = (),
               mode: str | None = None) -> dict:
    data = state.engine.search(SearchRequest(text, k, concept=concept, where=tuple(where), mode=mode)).as_dict()
    files = state.files()
    linked(state, data["hits"], files)
    data.update(notices=[state.public(n) for n in data["notices"]], root=state.root.name)
    return data


def run_dupes(state: ServerState, level: str, threshold: float | None, indexer: str | None,
              where: Sequence[str], keep: str) -> dict:
    data = state.engine.dupes(DupesRequest(level, threshold, indexer, tuple(where), keep)).as_dict()
    for member in (m for group in data["groups"] for m in group["members"]):  # what the web view shows
        member.update(poster=poster_url(member["path"], member["start"], member["end"]),
                      media=media_url(member["path"]))
    data.update(notices=[state.public(n) for n in data["notices"]], root=state.root.name)
    return data


def fields_answer(state: ServerState) -> dict:
    kinds = state.engine.fields()
    return {"fields": [{"name": name, "kind": kind} for name, kind in kinds.items()], "operators": list(OPERATORS)}


def run_compare(state: ServerState, body: CompareIn) -> dict:
    request = body.to_request(state.resolve, state.reranker_for)
    with state.asking(request.reranker):
        # by signals: the scores a query for the anchor gives b, exactly what the gallery showed
        data = state.engine.compare(request).as_dict()
    a_plays, b_plays = state.playing(body.a), state.playing(body.b)
    data.update(root=state.root.name, a=body.a, b=body.b, a_media=a_plays["media"], b_media=b_plays["media"],
                a_playback=a_plays["playback"], b_playback=b_plays["playback"],
                a_strip=strip_url(body.a, body.a_start, body.a_end),
                b_strip=strip_url(body.b, data["b_start"], data["b_end"]))
    return data


def run_diff(state: ServerState, body: DiffIn) -> dict:
    if state.reranker is None:
        raise ApiError(400, NO_DIFF_MODEL)
    request = body.to_request(state.resolve, state.reranker)
    with state.asking(request.reranker):
        data = state.engine.diff(request).to_dict()  # the weights are checked before a frame is decoded
    data.update(a=body.a, b=body.b, cant_tell_margin=CANT_TELL_MARGIN,
                notices=[state.public(n) for n in data["notices"]])
    return data


# -- running it ---------------------------------------------------------------------------------
def make_server(index_dir: Path, host: str = "127.0.0.1", port: int = 8000, log_level: str = "info",
                extra_hosts: Sequence[str] = (), warm: bool = True, **app_options):
    """A uvicorn server for the app (``.run()`` blocks; tests run it in a thread); ``warm``: once it listens, build
    the models requests need in the background (see warmup.py); ``app_options``: the rest of ``create_app``'s
    (reranker, max_upload, upload_quota, allow_writes)."""
    import uvicorn  # uvicorn: only a running server needs it, not the app (tests use the app alone)

    app = create_app(Path(index_dir), hosts=allowed_hosts(host, extra_hosts), **app_options)

    class Server(uvicorn.Server):
        async def startup(self, sockets=None) -> None:
            await super().startup(sockets)
            if warm and self.started:  # listening: the first requests are answered while the models build
                app.state.convis.warmup.start(after=WARM_AFTER_S)

    return Server(uvicorn.Config(app, host=host, port=port, log_level=log_level))


def serve(index_dir: Path, host: str = "127.0.0.1", port: int = 8000, reranker: str | None = None,
          extra_hosts: Sequence[str] = (), max_upload: int = MAX_UPLOAD_BYTES,
          upload_quota: int = UPLOAD_QUOTA_BYTES, allow_writes: bool = False) -> None:
    """Serve the UI and API until interrupted; localhost only unless ``host`` says otherwise; answering only
    requests for the loopback names, ``host`` and ``extra_hosts``; ``allow_writes``: see writes.py."""
    make_server(index_dir, host, port, extra_hosts=extra_hosts, reranker=reranker, max_upload=max_upload,
                upload_quota=upload_quota, allow_writes=allow_writes).run()


# -- the web UI: real files served as package data, vanilla JS, no external resources -------------
UI_FILES = {"app.js": "text/javascript", "removed.js": "text/javascript", "diff.js": "text/javascript",
            "app.css": "text/css", "gallery.css": "text/css", "dupes.html": "text/html"}


@functools.cache
def ui_file(name: str) -> str:
    """One file of ``ui/`` (package data), read once."""
    return (resources.files("retrieval.serve") / "ui" / name).read_text(encoding="utf-8")
