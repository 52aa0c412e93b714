"""Which requests may reach the app: a local web app must not be reachable through another site.

- Host: only the names the server is meant to answer to (loopback, the address it binds, names given with
  ``--allowed-host``); a DNS-rebinding page, whose requests carry its own host name, is refused.
- Origin: a write (POST) from a page of another origin is refused; browsers send Origin on such requests.
- Upload size: refused from the request's declared length, before a byte of the body is read or spooled
  (a body without a length, or longer than it said, is cut off while it streams: see the upload route).
- Upload folders are removed when their server exits, and those of servers that were killed (which run no
  exit code) when the next one starts.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path
from typing import Sequence
from urllib.parse import urlparse

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from starlette.middleware.trustedhost import TrustedHostMiddleware

LOOPBACK = ("127.0.0.1", "localhost", "::1", "[::1]")
WILDCARDS = ("0.0.0.0", "::", "")
UPLOAD_PREFIX = "convis-uploads-"
MULTIPART_SLACK = 64 << 10  # form boundaries and headers around the file in an upload's body
SAFE_METHODS = ("GET", "HEAD", "OPTIONS")


def allowed_hosts(bind: str, extra: Sequence[str] = ()) -> list[str]:
    """Loopback names, the address the server binds (unless it binds every address), and ``extra``."""
    return [*LOOPBACK, *([] if bind in WILDCARDS else [bind]), *extra]


def guard(app: FastAPI, hosts: Sequence[str], upload_path: str, max_upload: int) -> None:
    """Add the host, origin and upload-size checks to ``app``."""
    names = {h.strip("[]").lower() for h in hosts}

    @app.middleware("http")
    async def same_origin_writes(request: Request, call_next):
        origin = request.headers.get("origin")
        if request.method not in SAFE_METHODS and origin and (urlparse(origin).hostname or "").lower() not in names:
            return _refuse(403, f"writes from another origin are refused ({origin})")
        if request.method == "POST" and request.url.path == upload_path:
            refused = _upload_length(request.headers.get("content-length"), max_upload)
            if refused is not None:
                return refused
        return await call_next(request)

    app.add_middleware(TrustedHostMiddleware, allowed_hosts=list(hosts))


def _upload_length(declared: str | None, limit: int) -> JSONResponse | None:
    if declared is None or not declared.isdigit():
        return None  # chunked: counted as it streams
    if int(declared) > limit + MULTIPART_SLACK:
        return _refuse(413, f"upload larger than {limit >> 20} MiB")
    return None


def _refuse(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


def upload_folder() -> Path:
    """A fresh folder for this server's uploads, named by its process id, after removing those of dead servers;
    it is removed at exit."""
    for stale in Path(tempfile.gettempdir()).glob(UPLOAD_PREFIX + "*"):
        if stale.is_dir() and not _alive(_owner(stale)):
            shutil.rmtree(stale, ignore_errors=True)
    folder = Path(tempfile.mkdtemp(prefix=f"{UPLOAD_PREFIX}{os.getpid()}-"))
    # not only at the app's shutdown: a forced stop (a second Ctrl-C) skips it, and so does an app never served
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return folder


def _owner(folder: Path) -> int | None:
    pid = folder.name[len(UPLOAD_PREFIX):].split("-", 1)[0]
    return int(pid) if pid.isdigit() else None


def _alive(pid: int | None) -> bool:
    if pid is None:
        return True  # not named by a pid: not ours to judge
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's live process
    return True
