"""``/search``: indexed clips ranked by how well they match a text."""

from __future__ import annotations

from typing import Sequence

from fastapi import APIRouter

from retrieval.api import DEFAULT_K, SearchRequest
from retrieval.api import request_fields as spec
from retrieval.serve.errors import responses
from retrieval.serve.fields import WhereText, query_param
from retrieval.serve.guards import ORIGIN_CHECKED
from retrieval.serve.routes.query import linked
from retrieval.serve.state import ServerState

MAX_SEARCH_K = 100  # a page of results: each one is a strip and a player in the web UI
SEARCH_TEXT = query_param(spec.TEXT, ..., min_length=1, examples=["a hand holding a cup"])
SEARCH_K = query_param(spec.K, DEFAULT_K, le=MAX_SEARCH_K)
SEARCH_CONCEPT = query_param(spec.CONCEPT, None, min_length=1, examples=["location"])
SEARCH_MODE = query_param(spec.SEARCH_MODE, None, examples=["hybrid"])
WHERE = query_param(spec.WHERE, [], examples=[["duration > 10"]])


def search_routes(state: ServerState) -> APIRouter:
    router = APIRouter()

    @router.get("/search", summary="Rank indexed clips by how well they match a text, with every signal that "
                "has a text tower", responses=responses(400, 403, 422, 503), dependencies=ORIGIN_CHECKED)
    async def search(text: str = SEARCH_TEXT, k: int = SEARCH_K, concept: str | None = SEARCH_CONCEPT,
                     where: list[WhereText] = WHERE, mode: str | None = SEARCH_MODE):
        return await state.answer(run_search, state, text, k, concept, where, mode)

    return router


def run_search(state: ServerState, text: str, k: int, concept: str | None = None, where: Sequence[str] = (),
               mode: str | None = None) -> dict:
    data = state.engine.search(SearchRequest(text, k, concept=concept, where=tuple(where), mode=mode)).as_dict()
    linked(state, data["hits"], state.files())
    data.update(notices=[state.public(n) for n in data["notices"]], root=state.root.name)
    return data
