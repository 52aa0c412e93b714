"""``/compare`` (how alike the anchor and one clip are, per concept) and ``/diff`` (what differs between them)."""

from __future__ import annotations

from fastapi import APIRouter

from retrieval.api import CANT_TELL_MARGIN
from retrieval.serve.bodies import CompareIn, DiffIn
from retrieval.serve.errors import ApiError, responses
from retrieval.serve.state import ServerState
from retrieval.serve.urls import strip_url

NO_DIFF_MODEL = ("this server has no LMM to say what differs: start it with `convis serve --reranker NAME` (e.g. "
                 "qwen2.5-vl)")


def compare_routes(state: ServerState) -> APIRouter:
    router = APIRouter()

    @router.post("/compare", summary="Per-concept similarity of the anchor and one indexed clip",
                 responses=responses(400, 403, 404, 422, 503))
    async def compare(body: CompareIn):
        return await state.answer(run_compare, state, body)

    @router.post("/diff", summary="What differs between the anchor and one clip, and which clip each statement is "
                 "more true of, asked of the server's --reranker (as `convis diff`; its weights are checked first)",
                 responses=responses(400, 403, 404, 422, 503))
    async def diff(body: DiffIn):
        return await state.answer(run_diff, state, body)

    return router


def run_compare(state: ServerState, body: CompareIn) -> dict:
    request = body.to_request(state.resolve, state.reranker_for)
    with state.asking(request.reranker):
        # by signals: the scores a query for the anchor gives b, exactly what the gallery showed
        data = state.engine.compare(request).as_dict()
    a_plays, b_plays = state.playing(body.a), state.playing(body.b)
    data.update(root=state.root.name, a=body.a, b=body.b, a_media=a_plays["media"], b_media=b_plays["media"],
                a_playback=a_plays["playback"], b_playback=b_plays["playback"],
                a_strip=strip_url(body.a, body.a_start, body.a_end),
                b_strip=strip_url(body.b, data["b_start"], data["b_end"]),
                notices=[state.public(n) for n in data["notices"]])
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
