"""``/dupes``: near-duplicate files or units in groups, as ``convis dupes --json``."""

from __future__ import annotations

from typing import Sequence

from fastapi import APIRouter

from retrieval.api import DupesRequest
from retrieval.api import request_fields as spec
from retrieval.serve.errors import responses
from retrieval.serve.fields import WhereText, query_param
from retrieval.serve.guards import ORIGIN_CHECKED
from retrieval.serve.playback import media_url
from retrieval.serve.routes.search import WHERE
from retrieval.serve.state import ServerState
from retrieval.serve.urls import poster_url

LEVEL = query_param(spec.LEVEL, "file")
THRESHOLD = query_param(spec.THRESHOLD, None, allow_inf_nan=False)
INDEXER = query_param(spec.DUPES_INDEXER, None, min_length=1)
KEEP = query_param(spec.KEEP, "longest")


def dupes_routes(state: ServerState) -> APIRouter:
    router = APIRouter()

    @router.get("/dupes", summary="Near-duplicate files or units in groups, one to keep in each and the rest to "
                "drop (as `convis dupes --json`)", responses=responses(400, 403, 422, 503),
                dependencies=ORIGIN_CHECKED)
    async def dupes(level: str = LEVEL, threshold: float | None = THRESHOLD, indexer: str | None = INDEXER,
                    where: list[WhereText] = WHERE, keep: str = KEEP):
        return await state.answer(run_dupes, state, level, threshold, indexer, where, keep)

    return router


def run_dupes(state: ServerState, level: str, threshold: float | None, indexer: str | None, where: Sequence[str],
              keep: str) -> dict:
    data = state.engine.dupes(DupesRequest(level, threshold, indexer, tuple(where), keep)).as_dict()
    for member in (m for group in data["groups"] for m in group["members"]):  # what the web view shows
        member.update(poster=poster_url(member["path"], member["start"], member["end"]),
                      media=media_url(member["path"]))
    data.update(notices=[state.public(n) for n in data["notices"]], root=state.root.name)
    return data
