"""``/collection``: a page of the indexed units, or of the failed, unavailable or removed files, filtered by folder,
status and name."""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter, Query

from retrieval.serve.errors import responses
from retrieval.serve.fields import MAX_REF_CHARS
from retrieval.serve.state import ServerState
from retrieval.serve.tags import tags_of
from retrieval.serve.urls import strip_url

REMOVED = "removed"  # the files taken out of the index, read once for each state of it like the listing
MAX_PAGE = 200  # units on one page of the collection: each is a thumbnail the browser loads
COLLECTION_STATUSES = ("ok", "failed", "unavailable", "removed")
OFFLINE = "its folder was offline at the last index run; vectors kept"  # why an unavailable file is listed
FOLDER = Query(None, max_length=MAX_REF_CHARS, description="Only files in this folder (relative to the root; '' "
               "for the root's own files; subfolders included).")
NAME_FILTER = Query(None, max_length=200, description="Only files whose path contains this text (any case).")
STATUS = Query("ok", description="ok: the indexed units; failed, unavailable: those files; removed: the files "
               "taken out of the index (`convis remove`), each with when (`removed_at`) and whether its vectors are "
               "kept (`kept`: POST /files/{ref}/restore puts it back searchable at once).")


def collection_routes(state: ServerState) -> APIRouter:
    router = APIRouter()

    @router.get("/collection", summary="A page of the indexed units (or of the failed, unavailable or removed files: "
                "those taken out of the index, with when), filtered by folder, status and name",
                responses=responses(422, 503))
    async def collection(folder: str | None = FOLDER,
                         status: Literal["ok", "failed", "unavailable", "removed"] = STATUS,
                         name: str | None = NAME_FILTER, offset: int = Query(0, ge=0),
                         limit: int = Query(60, ge=1, le=MAX_PAGE)):
        return await state.answer(collection_answer, state, folder, status, name, offset, limit)

    return router


def collection_answer(state: ServerState, folder: str | None, status: str, name: str | None, offset: int,
                      limit: int) -> dict:
    notices: list[str] = []
    files = state.files(notices)
    removed = state.listing.answer(REMOVED, lambda _files, _notices: state.engine.removed())
    page = collection_page(files, folder, status, name, offset, limit, state.public, removed)
    for item in page["items"] if status == "ok" else ():
        item.update(state.playing(item["path"]))
    return {"root": state.root.name, **page, "notices": [state.public(notice) for notice in notices]}


def folder_of(path: str) -> str:
    return path.rsplit("/", 1)[0] if "/" in path else ""


def in_folder(path: str, folder: str | None) -> bool:
    """``path`` is in ``folder`` or below it; None: any folder; "": the root's own files only."""
    here = folder_of(path)
    if folder is None or here == folder:
        return True
    return folder != "" and here.startswith(folder + "/")


def collection_page(files, folder: str | None, status: str, name: str | None, offset: int, limit: int,
                    public=str, removed=()) -> dict:
    """One page of the units of the ``status`` "ok" files (or of the "failed", "unavailable" or "removed" files), in
    path order; the counts and folders tell the client what the other pages and filters hold."""
    folders = sorted({folder_of(f.path) for f in files})

    def shown(path: str) -> bool:
        return in_folder(path, folder) and (not name or name.lower() in path.lower())

    inside = [f for f in files if shown(f.path)]
    counts = {kind: sum(f.status == kind for f in inside) for kind in COLLECTION_STATUSES}
    counts["removed"] = sum(shown(f.path) for f in removed)
    if status == "removed":
        items = [{"path": f.path, "folder": folder_of(f.path), "removed_at": f.removed_at, "kept": f.kept,
                  "units": f.units} for f in removed if shown(f.path)]
    elif status != "ok":
        items = [{"path": f.path, "error": public(f.error or "failed") if status == "failed" else OFFLINE}
                 for f in inside if f.status == status]
    else:
        items = [{"path": f.path, "folder": folder_of(f.path), "segment": seg, "start": round(start, 3),
                  "end": round(end, 3), "duration": f.duration, "units": len(f.units),
                  "strip": strip_url(f.path, start, end, 4), "tags": tags_of(f.fields)}
                 for f in inside if f.status == "ok" for seg, start, end in f.units]
    return {"folders": folders, "counts": counts, "total": len(items), "offset": offset, "limit": limit,
            "items": items[offset:offset + limit]}
