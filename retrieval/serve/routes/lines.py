"""A file's timed text lines for the player's transcript: its subtitles, speech and on-screen text, by time."""

from __future__ import annotations

from fastapi import APIRouter

from retrieval.serve.errors import responses
from retrieval.serve.routes.evidence import REF
from retrieval.serve.state import ServerState


def transcript_routes(state: ServerState) -> APIRouter:
    router = APIRouter()

    @router.get("/lines/{ref:path}", summary="A file's timed text lines (subtitles, speech, on-screen text) by "
                "time, for the transcript under the player", responses=responses(400, 403, 404, 422, 503))
    async def lines(ref: str = REF):
        return await state.workers.run(file_lines, ref)

    def file_lines(ref: str) -> dict:
        state.resolve(ref)  # a path the server would not serve has no lines either
        with state.engine.open_catalog([]) as catalog:
            found = catalog.file_lines(ref)
        return {"ref": ref, "lines": [{"source": x.source, "origin": x.origin, "start": round(x.start, 3),
                                       "end": round(x.end, 3), "text": x.text, "language": x.language}
                                      for x in found]}

    return router
