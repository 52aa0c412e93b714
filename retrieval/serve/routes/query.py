"""Asking by example: uploading an anchor, ``/query`` (clips like it, by concept) and its gallery page."""

from __future__ import annotations

import dataclasses
import re
import tempfile
from pathlib import Path

from fastapi import APIRouter, File, UploadFile
from fastapi.responses import HTMLResponse

from retrieval.serve.bodies import GalleryIn, QueryIn
from retrieval.serve.errors import ApiError, responses
from retrieval.serve.gallery import write_query_html
from retrieval.serve.guards import MULTIPART_SLACK
from retrieval.serve.links import answer_links, link
from retrieval.serve.state import ServerState
from retrieval.serve.tags import tags_of
from retrieval.serve.uploads import UPLOADS
from retrieval.serve.urls import poster_url, strip_url

MAX_GALLERY = 50  # results in an exported gallery: each embeds a clip made with ffmpeg
# where an answer leads: the values a client passes on (see links.py)
ANCHOR = "$response.body#/anchor"  # an upload's ref, or a query's anchor
FIRST_HIT = "$response.body#/hits/0"
QUERY_LINKS = answer_links(200, compare=link("POST", "/compare", body={"a": ANCHOR, "b": f"{FIRST_HIT}/path"}),
                           evidence=link("GET", "/evidence/{ref}", {"ref": f"{FIRST_HIT}/path",
                                                                    "segment": f"{FIRST_HIT}/segment"}))


def upload_links(writes: bool) -> dict:
    found = {"query": link("POST", "/query", body={"anchor": ANCHOR}),
             "strip": link("GET", "/strips/{ref}", {"ref": ANCHOR})}
    if writes:
        found["add"] = link("POST", "/index/files", body={"uploads": [ANCHOR]})
    return answer_links(200, **found)


def query_routes(state: ServerState) -> APIRouter:
    router = APIRouter()

    # the body limit is enforced while the request streams: no more than the limit is ever read or spooled
    @router.post("/uploads", summary="Upload an anchor clip; returns its ref for /query",
                 responses={**upload_links(state.allow_writes), **responses(400, 403, 413, 415, 422, 503)},
                 max_body_size=state.uploads.max_bytes + MULTIPART_SLACK)
    async def upload(file: UploadFile = File(...)):
        return await state.answer(upload_answer, state, file)  # the upload is decoded: is it a video?

    @router.post("/query", summary="Rank indexed clips by similarity to the anchor, per concept",
                 responses={**QUERY_LINKS, **responses(400, 403, 404, 422, 503)})
    async def query(body: QueryIn):
        return await state.answer(run_query, state, body)

    @router.post("/export/gallery", summary="The query's results as one self-contained HTML page (thumbnails and "
                 "an H.264 clip of each result embedded)",
                 responses={200: {"content": {"text/html": {}}}, **responses(400, 403, 404, 422, 503)})
    async def export_gallery(body: GalleryIn):
        name = re.sub(r"[^A-Za-z0-9._-]+", "_", Path(body.anchor).stem)[:60] or "results"  # a header is ASCII
        return HTMLResponse(await state.workers.run(gallery_page, state, body),
                            headers={"Content-Disposition": f'attachment; filename="convis-{name}.html"'})

    return router


def upload_answer(state: ServerState, file: UploadFile) -> dict:
    ref, size = state.uploads.save(file)
    return {"anchor": ref, "name": file.filename, "size": size, **state.playing(ref),
            "strip": strip_url(ref, None, None)}


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
    middle frame), its file's duration (a timeline) and its file's tags."""
    by_path = {f.path: f for f in files}
    for hit in hits:
        file = by_path.get(hit["path"])
        hit.update(**state.playing(hit["path"]), strip=strip_url(hit["path"], hit["start"], hit["end"]),
                   poster=poster_url(hit["path"], hit["start"], hit["end"]),
                   duration=file.duration if file else None, tags=tags_of(file.fields) if file else [])
