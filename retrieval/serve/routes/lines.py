"""A file's timed text lines for the player's transcript: its subtitles, speech and on-screen text, by time.

An answer holds at most ``LINES_PAGE`` lines (a day of speech has tens of thousands): ``next_start`` says where the
next page starts, and is null on the last one.
"""

from __future__ import annotations

from fastapi import APIRouter, Query

from retrieval.serve.errors import responses
from retrieval.serve.routes.evidence import REF
from retrieval.serve.state import ServerState

LINES_PAGE = 2000  # lines an answer holds at most: ~200 KB of JSON


def transcript_routes(state: ServerState) -> APIRouter:
    router = APIRouter()

    @router.get("/lines/{ref:ref}", summary="A file's timed text lines (subtitles, speech, on-screen text) by "
                "time, for the transcript under the player, a page at a time", responses=responses(400, 403, 404,
                                                                                                     422, 503))
    async def lines(ref: str = REF, start: float = Query(0.0, ge=0, description="Lines starting this many "
                                                                              "seconds in or later."),
                    limit: int = Query(LINES_PAGE, ge=1, le=LINES_PAGE, description="At most this many lines.")):
        return await state.workers.run(file_lines, ref, start, limit)

    def file_lines(ref: str, start: float, limit: int) -> dict:
        state.resolve(ref)  # a path the server would not serve has no lines either
        with state.engine.open_catalog([]) as catalog:
            found = catalog.file_lines(ref, start=start, limit=limit + 1)
        page, next_start = _page(found, limit)
        return {"ref": ref, "lines": [{"source": x.source, "origin": x.origin, "start": round(x.start, 3),
                                       "end": round(x.end, 3), "text": x.text, "language": x.language}
                                      for x in page],
                "next_start": next_start}

    return router


def _page(found: list, limit: int) -> tuple[list, float | None]:
    """The first ``limit`` of ``found`` (read one past it) and where the next page starts: a page never ends
    inside one start time, so asking from ``next_start`` repeats no line and misses none."""
    if len(found) <= limit:
        return found, None
    boundary = found[limit].start
    page = [x for x in found[:limit] if x.start < boundary]
    if page:
        return page, boundary
    # more than a page of lines start at one instant: that instant's first page, then the lines after it
    return found[:limit], boundary + 0.001
