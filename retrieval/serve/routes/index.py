"""What the index holds: ``/health`` and ``/videos``, answered from what the server keeps (see health.py), and
``/fields``, what a filter may name."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Sequence

from fastapi import APIRouter
from fastapi.responses import JSONResponse, Response
from starlette.concurrency import run_in_threadpool

from retrieval.api import OPERATORS, FileListing, has_text_tower
from retrieval.serve.errors import responses
from retrieval.serve.facets import facets
from retrieval.serve.links import answer_links, link
from retrieval.serve.playback import media_url
from retrieval.serve.state import ServerState
from retrieval.serve.urls import strip_url

VIDEOS = "videos"  # the listing's answer /videos sends (see health.py)
LISTED = "$response.body#/files/0/path"  # where an answer leads: the values a client passes on (see links.py)


def videos_links(writes: bool) -> dict:
    found = {"strip": link("GET", "/strips/{ref}", {"ref": LISTED}),
             "media": link("GET", "/media/{ref}", {"ref": LISTED}),
             "evidence": link("GET", "/evidence/{ref}", {"ref": LISTED}),
             "query": link("POST", "/query", body={"anchor": LISTED})}
    if writes:
        found["remove"] = link("DELETE", "/files/{ref}", {"ref": LISTED})
    return answer_links(200, **found)


def index_routes(state: ServerState) -> APIRouter:
    router = APIRouter()

    # answered on the event loop from what the server keeps: a probe never waits for the requests being answered
    @router.get("/health", summary="Is the index readable, and what is in it (as last read: `state_age_s` says how "
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

    @router.get("/videos", summary="Indexed files and their retrievable units",
                responses={**videos_links(state.allow_writes), **responses(503)})
    async def videos():
        # the same bytes for every request while the index stays as it is; after a change, one read of the listing
        # (the requests asking meanwhile wait for it), never queued behind the workers' queries
        body = state.listing.ready(VIDEOS) or await run_in_threadpool(state.listing.answer, VIDEOS,
                                                                      functools.partial(videos_body, state))
        return Response(body, media_type="application/json")

    @router.get("/fields", summary="The fields a `where` filter may name in this index (built-in, then the user's "
                "from `convis tag` and --metadata), each one's kind and its most common values with how many files "
                "hold each, and the operators", responses=responses(503))
    async def fields():
        return await state.answer(fields_answer, state)

    return router


def text_search(indexers: list[dict]) -> bool:
    """Whether a signal of the index reads text: captions, or a family whose registry card has a text tower."""
    return any(row["kind"] == "text" for row in indexers) or any(has_text_tower(row["indexer"]) for row in indexers)


def _shown_index_dir(index_dir: Path, root: Path) -> str:
    index_dir = index_dir.resolve()
    return str(index_dir.relative_to(root)) if index_dir.is_relative_to(root) else index_dir.name


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


def list_videos(files: Sequence[FileListing], public=str) -> list[dict]:
    """Every file the index knows, as /videos lists it; ``public`` rewrites error messages for the client."""
    return [{"path": f.path, "status": f.status, "error": public(f.error) if f.error else f.error,
             "duration": f.duration, "width": f.width, "height": f.height,
             "media": media_url(f.path) if f.status == "ok" else None,
             "units": [{"segment": seg, "start": round(start, 3), "end": round(end, 3),
                        "strip": strip_url(f.path, start, end)} for seg, start, end in f.units]}
            for f in files]


def fields_answer(state: ServerState) -> dict:
    """Each field with its kind and, where the files hold values of it, the most common ones with their counts
    (``values``: what a filter chip offers, each with its condition)."""
    kinds = state.engine.fields()
    found = facets(state.files(), list(kinds))
    return {"fields": [{"name": name, "kind": kind, "values": found.get(name, [])} for name, kind in kinds.items()],
            "operators": list(OPERATORS)}
