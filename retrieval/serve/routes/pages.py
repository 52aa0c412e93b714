"""The web UI: real files served as package data, vanilla JS, no external resources."""

from __future__ import annotations

import functools
from importlib import resources

from fastapi import APIRouter
from fastapi.responses import HTMLResponse, Response

from retrieval.serve.errors import ApiError

UI_FILES = {"app.js": "text/javascript", "removed.js": "text/javascript", "diff.js": "text/javascript",
            "app.css": "text/css", "gallery.css": "text/css", "dupes.html": "text/html"}


@functools.cache
def ui_file(name: str) -> str:
    """One file of ``ui/`` (package data), read once."""
    return (resources.files("retrieval.serve") / "ui" / name).read_text(encoding="utf-8")


def page_routes(_state) -> APIRouter:
    router = APIRouter(include_in_schema=False)

    @router.get("/", response_class=HTMLResponse)
    def index_page():
        return HTMLResponse(ui_file("index.html"), headers={"Cache-Control": "no-cache"})

    @router.get("/ui/{name}")
    def ui_asset(name: str):
        if name not in UI_FILES:
            raise ApiError(404, f"no such file: {name}")
        return Response(ui_file(name), media_type=UI_FILES[name], headers={"Cache-Control": "no-cache"})

    return router
