"""Index management from the app: add uploaded clips, remove files from the index, re-index the folder.

Only a server started with ``convis serve --allow-writes`` does any of it (403 otherwise), one change at a time,
and never while another process writes the index (409: a ``convis index`` run, say).  Runs go on in a child
process (see index_job.py) and ``GET /index/job`` follows them (a run started by a server since killed too);
queries meanwhile read the snapshot the run publishes, and once it is done they read what it committed.

- Adding copies each upload into a folder inside the root (default ``added``) under the name it was uploaded
  with, then indexes the root (only new and changed files are embedded).  A file of that name with other bytes
  is never replaced: the clip is stored as ``name (2).mp4`` (``(3)``, ...) instead; a file with the very same
  bytes is indexed as it is.
- Removing takes a file out of the index: no search, listing or count shows it, and later runs skip it; the file
  stays on disk and its vectors are kept (``GET /collection?status=removed`` lists it).  Restoring it (``POST
  /files/{ref}/restore``, as ``convis remove --undo``) puts them back, searchable at once with nothing embedded;
  adding a clip under its path again restores it too, and the run then indexes it if its bytes changed.
"""

from __future__ import annotations

import errno
import filecmp
import os
import re
import shutil
import uuid
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Annotated, Iterator

from fastapi import APIRouter
from pydantic import Field, StringConstraints

from retrieval.api import CatalogBusy, NotIndexedError, too_long, writer_pid
from retrieval.serve.errors import FOLDER_PATTERN, REF_RULE, WHY, WINDOWS, ApiError, ErrorOut, RequestBody
from retrieval.serve.fields import ref_path
from retrieval.serve.health import note_change
from retrieval.serve.index_job import IndexJobs
from retrieval.serve.links import answer_links, link
from retrieval.serve.state import ServerState
from retrieval.serve.tags import TagsIn, retag
from retrieval.serve.uploads import UPLOAD_REF

READ_ONLY = "this server is read-only: start it with `convis serve --allow-writes` to add, remove or re-index files"
DEFAULT_FOLDER = "added"
MAX_ADDED = 64  # clips one request adds: each is a copy and a file to index
MAX_FOLDER_CHARS = 512
MAX_SAME_NAME = 1000  # "name (2).mp4" ... : past this many namesakes, the folder is not one to add to

REF_PATH = ref_path("The file's path relative to the index root, as GET /videos lists it.")
UploadRef = Annotated[str, StringConstraints(pattern=f"^{UPLOAD_REF.pattern}$")]

WRITE_WHY = {
    403: "Refused: this server is read-only (start it with --allow-writes), or a write from another origin (a "
         "page of another scheme, host or port), or a folder leading outside the index root.",
    409: "Not now: an index run is writing this index, or another change to it is being made; retry when it ends. "
         "Or a file has the name of the folder to add clips to.",
}
# a change started is followed by asking how it goes; a file removed can be put back
FOLLOW_JOB = answer_links(202, job=link("GET", "/index/job"))
UNDO_REMOVE = answer_links(200, restore=link("POST", "/files/{ref}/restore", {"ref": "$response.body#/removed/0"}))


def write_responses(*codes: int) -> dict:
    return {code: {"model": ErrorOut, "description": WRITE_WHY.get(code) or WHY[code]} for code in codes}


class AddIn(RequestBody):
    uploads: list[UploadRef] = Field(..., min_length=1, max_length=MAX_ADDED, description="Refs from POST /uploads.",
                                     examples=[[".uploads/" + "0" * 32 + ".mp4"]])
    folder: str = Field(DEFAULT_FOLDER, min_length=1, max_length=MAX_FOLDER_CHARS, pattern=FOLDER_PATTERN,
                        description="Folder inside the index root the clips are copied into (created if needed): "
                                    "relative to the root, without '..', hidden parts, backslashes or a drive.")


class RunIn(RequestBody):
    retry_failed: bool = Field(False, description="Try again every file that failed before, unchanged since.")


def write_routes(state: ServerState) -> APIRouter:
    jobs = IndexJobs(state.engine.index_dir)

    @asynccontextmanager
    async def lifespan(_app):
        yield
        jobs.close()  # a run the app started stops with it; the next run resumes what it left

    # a read-only server does not document routes it only refuses
    router = APIRouter(lifespan=lifespan, include_in_schema=state.allow_writes)

    @router.get("/index/job", summary="The index run the app started last, and whether this server takes writes")
    def index_job():
        job = jobs.last  # read once: it is read from the index folder each time
        return {**(job.as_dict(state.public) if job else {"state": "idle"}), "allow_writes": state.allow_writes}

    @router.post("/index/files", status_code=202, summary="Add uploaded clips to the folder and index them",
                 responses={**FOLLOW_JOB, **write_responses(400, 403, 404, 409, 422, 503)})
    def add_files(body: AddIn):
        with writing(state, jobs):
            sources = [(ref, state.uploads.path(ref)) for ref in body.uploads]  # 404 for an upload gone
            folder = target_folder(state.root, state.engine.index_dir, body.folder)
            placed = [place(path, folder, state.uploads.name(ref)) for ref, path in sources]
            refs = list(dict.fromkeys(p.relative_to(state.root).as_posix() for p in placed))
            job = jobs.start("add", refs, state.engine.index_dir.resolve(), state.root, include=refs)
        return job.as_dict(state.public)

    # before DELETE /files/{ref}: its path would take /restore as part of the ref, and a request that matches no
    # method is answered by the first route whose path it matches (OPTIONS .../restore would advertise DELETE)
    @router.post("/files/{ref:ref}/restore", summary="Put a removed file back in the index: its stored vectors are "
                 "searchable at once, nothing is embedded again (`to_index`: removed before vectors were kept, the "
                 "next run indexes them)", responses=write_responses(400, 403, 404, 409, 422, 503, 507))
    def restore_file(ref: str = REF_PATH):
        with writing(state, jobs), refused_by_catalog():
            done = state.engine.unremove([ref])
            return {"restored": done.restored, "to_index": done.to_index}

    @router.post("/files/{ref:ref}/tags", summary="Add tags to a file or remove some (the user field `tags`, as "
                 "`convis tag FILE --set tags=...` sets it; `where` filters read it: `tags has goal`); the file's "
                 "tags after the change", responses=write_responses(400, 403, 404, 409, 422, 503, 507))
    def tag_file(body: TagsIn, ref: str = REF_PATH):
        with writing(state, jobs), refused_by_catalog():
            return retag(state, ref, body)

    @router.delete("/files/{ref:ref}", summary="Remove a file from the index (never from disk): no search or "
                   "listing shows it, its vectors are kept for POST /files/{ref}/restore",
                   responses={**UNDO_REMOVE, **write_responses(400, 403, 404, 409, 422, 503, 507)})
    def remove_file(ref: str = REF_PATH):
        with writing(state, jobs), refused_by_catalog():
            return {"removed": state.engine.remove([ref])}

    @router.post("/index/runs", status_code=202, summary="Re-index the folder: new, changed and gone files",
                 responses={**FOLLOW_JOB, **write_responses(400, 403, 409, 422, 503)})
    def reindex(body: RunIn | None = None):
        with writing(state, jobs):
            retry = body is not None and body.retry_failed
            job = jobs.start("reindex", [], state.engine.index_dir.resolve(), state.root, retry_failed=retry)
        return job.as_dict(state.public)

    return router


@contextmanager
def refused_by_catalog() -> Iterator[None]:
    """A file the index does not hold is a 404; a writer that came between the check and the open, a 409."""
    try:
        yield
    except NotIndexedError as exc:
        raise ApiError(404, str(exc)) from None
    except CatalogBusy as exc:
        raise ApiError(409, f"{exc}") from None


@contextmanager
def writing(state: ServerState, jobs: IndexJobs):
    """Hold the right to change the index for one request, or refuse it: 403 on a read-only server, 409 while a
    change is being made or another process writes the index."""
    if not state.allow_writes:
        raise ApiError(403, READ_ONLY)
    if not jobs.starting.acquire(blocking=False):
        raise ApiError(409, "another change to this index is being made; try again in a moment")
    try:
        job = jobs.running()
        if job is not None:
            raise ApiError(409, f"an index run started from this app (job {job.id}) is writing this index; try "
                                "again when it ends")
        pid = writer_pid(state.engine.catalog_path)
        if pid is not None:
            raise ApiError(409, f"an index run (process {pid}) is writing this index; try again when it ends")
        yield
    finally:
        note_change(state.engine.index_dir)  # a commit can leave the catalog's stats as they were
        jobs.starting.release()


def target_folder(root: Path, index_dir: Path, folder: str) -> Path:
    """The folder inside ``root`` that ``folder`` names, created if needed; ApiError for any other."""
    parts = folder.split("/")
    if ("\x00" in folder or folder.startswith("/") or any(not p or p.startswith(".") for p in parts)
            or (WINDOWS and ("\\" in folder or re.match(r"[A-Za-z]:", folder)))):
        raise ApiError(400, REF_RULE.replace("not a servable path", "folder", 1))
    try:
        real = (root / folder).resolve()
    except OSError as exc:  # a part over the filesystem's limit
        raise _unmade(folder, root / folder, exc) from None
    if not real.is_relative_to(root):
        raise ApiError(403, "that folder leads outside the index root")
    if real.is_relative_to(index_dir.resolve()):
        raise ApiError(400, "that folder is the index's own: clips there are never indexed")
    try:
        if real.exists() and not real.is_dir():  # the request is well formed: the folder's name is taken
            raise ApiError(409, f"not a folder: {folder} is a file")
        real.mkdir(parents=True, exist_ok=True)
    except OSError as exc:  # exists() too raises for a name over the limit
        raise _unmade(folder, real, exc) from None
    return real


def _unmade(folder: str, path: Path, exc: OSError) -> ApiError:
    """Why ``folder`` cannot be made: a part of it is a file (409), or a name too long (400)."""
    if isinstance(exc, NotADirectoryError):  # "cup.mp4/new"
        return ApiError(409, f"not a folder: a part of {folder} is a file")
    if exc.errno == errno.ENAMETOOLONG:
        return ApiError(400, f"folder: {too_long(path)}")
    return ApiError(409, f"cannot make the folder {folder}: {exc.strerror}")


def place(source: Path, folder: Path, name: str) -> Path:
    """``source`` copied into ``folder`` as ``name``, or ``name (2)``, ... where a file with other bytes has the
    name; a file with the same bytes already there is used as it is."""
    stem, suffix = Path(name).stem, Path(name).suffix
    # copied under a hidden name first (never indexed), then linked to its name: no half-written clip is
    # ever visible, and a file that appears meanwhile is never replaced
    part = folder / f".{uuid.uuid4().hex}.part{suffix}"
    shutil.copyfile(source, part)
    try:
        for n in range(1, MAX_SAME_NAME + 1):
            dest = folder / (name if n == 1 else f"{stem} ({n}){suffix}")
            if dest.is_file() and filecmp.cmp(dest, source, shallow=False):
                return dest
            try:
                os.link(part, dest)
                return dest
            except FileExistsError:
                continue
    finally:
        part.unlink(missing_ok=True)
    raise ApiError(409, f"{MAX_SAME_NAME} files in that folder are named like {name}; add it to another folder")
