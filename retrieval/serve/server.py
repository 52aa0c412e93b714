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

Here: the app (``create_app``: the state its requests share, state.py; its error handlers; its routes) and the
uvicorn server. The routes live one module a verb group in ``routes/``; the request bodies in bodies.py, their
fields' help and bounds read from the request values (fields.py), as the CLI's options read them; and the server
imports nothing below ``retrieval.api`` (an import-linter contract).
"""

from __future__ import annotations

import functools
import shutil
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Sequence

from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

from retrieval.api import (
    MAX_UPLOAD_BYTES,
    UPLOAD_QUOTA_BYTES,
    ConvisError,
    Engine,
    NoIndexError,
    Previews,
    VideoDecoder,
    one_line,
)
from retrieval.serve.body_limit import MAX_BODY_BYTES, BodyLimit
from retrieval.serve.errors import validation_message
from retrieval.serve.guards import LOOPBACK, allowed_hosts, guard, upload_folder
from retrieval.serve.health import KeptIndex, KeptListing
from retrieval.serve.playback import PREVIEWS_DIRNAME, PlaybackLinks
from retrieval.serve.routes import ROUTES
from retrieval.serve.routes.index import VIDEOS, index_summary, videos_body
from retrieval.serve.state import ServerState
from retrieval.serve.thumbs import THUMB_SHORT_SIDE
from retrieval.serve.uploads import UploadStore
from retrieval.serve.warmup import Warmup
from retrieval.serve.workers import Workers

FREE_TEXT_OPT_IN = 'send "free_text": true, or tick "free text" in the web UI,'
# warming waits this long after the server listens: importing torch holds the interpreter for a few tenths of a
# second at a time, which would slow the answers a client asks first (the page, /health)
WARM_AFTER_S = 0.5


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
    # inside guard's middleware (added first): a receive that middleware wraps raises in a task group, which the
    # route would take for a malformed body
    app.add_middleware(BodyLimit, limit=MAX_BODY_BYTES, own_limit=("/uploads",))  # the upload route counts its own
    guard(app, hosts, "/uploads", max_upload)
    _add_error_handlers(app, state)
    for routes in ROUTES:  # each verb group's routes (routes/), in the order the API lists them
        app.include_router(routes(state))
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
    requests for the loopback names, ``host`` and ``extra_hosts``; ``allow_writes``: see routes/files.py."""
    make_server(index_dir, host, port, extra_hosts=extra_hosts, reranker=reranker, max_upload=max_upload,
                upload_quota=upload_quota, allow_writes=allow_writes).run()
