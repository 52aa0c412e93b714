"""Frames, thumbnails and the clips themselves."""

from __future__ import annotations

from fastapi import APIRouter, Query
from fastapi.responses import FileResponse, Response

from retrieval.api import PreviewError
from retrieval.serve.errors import ApiError, responses
from retrieval.serve.fields import ref_path
from retrieval.serve.guards import ORIGIN_CHECKED
from retrieval.serve.state import ServerState
from retrieval.serve.urls import thumb_url

REF_PATH = ref_path("Indexed path relative to the index root, or an upload ref.")
START = Query(0.0, ge=0, allow_inf_nan=False)
END = Query(None, gt=0, allow_inf_nan=False)
STRIP_N = Query(8, ge=1, le=32)
FORCE_PREVIEW = Query(False, description="Make the preview even of a file judged playable (the browser failed to "
                      "decode it); the file is linked to its preview from then on.")


def refused() -> dict:
    """What a route naming a clip may refuse, and why."""
    return responses(400, 403, 404, 422, 503)


def media_routes(state: ServerState) -> APIRouter:
    router = APIRouter()

    @router.get("/strips/{ref:ref}", summary="Timestamps and thumbnail URLs of a clip's frame strip",
                responses=refused(), dependencies=ORIGIN_CHECKED)
    async def strip_frames(ref: str = REF_PATH, start: float = START, end: float | None = END, n: int = STRIP_N):
        thumbs = await state.workers.run(state.strip_of, ref, start, end, n)
        frames = [{"time": round(t.time, 3), "width": t.width, "height": t.height,
                   "src": thumb_url(ref, start, end, n, i)} for i, t in enumerate(thumbs)]
        return {"ref": ref, "start": start, "end": end, "frames": frames}

    @router.get("/thumbs/{ref:ref}", summary="One JPEG frame of a clip's strip (with n=1: the span's middle "
                "frame, a result's poster)", responses={200: {"content": {"image/jpeg": {}}}, **refused()},
                dependencies=ORIGIN_CHECKED)
    async def thumb(ref: str = REF_PATH, i: int = Query(0, ge=0, le=31), start: float = START,
                    end: float | None = END, n: int = STRIP_N):
        thumbs = await state.workers.run(state.strip_of, ref, start, end, n)
        if i >= len(thumbs):
            raise ApiError(404, f"the strip has {len(thumbs)} frames")
        return Response(thumbs[i].jpeg, media_type="image/jpeg", headers={"Cache-Control": "private, max-age=300"})

    @router.get("/media/{ref:ref}", summary="The video file itself (range requests supported)",
                response_class=FileResponse, responses=refused())
    def media(ref: str = REF_PATH):
        return FileResponse(state.resolve(ref))

    @router.get("/previews/{ref:ref}", summary="The clip as the browser can play it: the file itself, or an H.264 "
                "preview made with ffmpeg on the first request and kept in the index (`force`: whatever the file "
                "is)", response_class=FileResponse, responses=refused(), dependencies=ORIGIN_CHECKED)
    def preview(ref: str = REF_PATH, force: bool = FORCE_PREVIEW):
        try:
            return FileResponse(state.links.playable_file(state.resolve(ref), force), media_type="video/mp4")
        except PreviewError as exc:
            raise ApiError(503, f"cannot make a preview of {ref}: {exc}") from None

    return router
