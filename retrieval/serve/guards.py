"""Which requests may reach the app: a local web app must not be reachable through another site.

- Host: only the names the server is meant to answer to (loopback, the address it binds, names given with
  ``--allowed-host``); a DNS-rebinding page, whose requests carry its own host name, is refused.
- Origin: a write (any method but GET, HEAD, OPTIONS) from a page of another origin is refused.  Same origin is
  scheme, host and port, the server's own: the scheme it listens with and the Host the request names (default
  ports 80 and 443 written or not); a page on another port of the same machine is another origin.  Browsers send
  Origin on such requests; where one does not, its ``Sec-Fetch-Site`` must say ``same-origin`` or ``none`` (typed
  by the user).  A request with neither header comes from no browser page (curl, a script): no other site can
  have sent it, so it is taken.  Anything that is not a plain serialised origin (``null``, userinfo, a path,
  spaces) is refused.
- Reads that cost seconds (a model, a search of every unit, decoding or transcoding: ``ORIGIN_CHECKED`` routes)
  are refused from another origin as writes are: no page elsewhere can make the server do that work
  (``<img src=".../dupes?threshold=0.50001">``).  The same page's own requests, and clients that are no page, are
  answered as before.
- Upload size: refused from the request's declared length, before a byte of the body is read or spooled
  (a body without a length, or longer than it said, is cut off while it streams: see the upload route).  Other
  bodies: body_limit.py.
- Upload folders are removed when their server exits, and those of servers that were killed (which run no
  exit code) when the next one starts.
"""

from __future__ import annotations

import atexit
import ipaddress
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Sequence

from fastapi import Depends, FastAPI, HTTPException, Request
from fastapi.responses import JSONResponse
from starlette.middleware.trustedhost import TrustedHostMiddleware

from retrieval.api import pid_alive

LOOPBACK = ("127.0.0.1", "localhost", "::1", "[::1]")
WILDCARDS = ("0.0.0.0", "::", "")
UPLOAD_PREFIX = "convis-uploads-"
MULTIPART_SLACK = 64 << 10  # form boundaries and headers around the file in an upload's body
SAFE_METHODS = ("GET", "HEAD", "OPTIONS")
DEFAULT_PORTS = {"http": 80, "https": 443}
# a host and optional port, as a Host header or a serialised origin writes them: no userinfo, path or space
AUTHORITY = r"(?P<host>\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+)(?::(?P<port>[0-9]{1,5}))?"
ORIGIN = re.compile(rf"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*)://{AUTHORITY}")
HOST = re.compile(AUTHORITY)
SAME_ORIGIN_FETCHES = ("same-origin", "none")  # Sec-Fetch-Site of the page's own requests, or of one typed
OWS = " \t"
MAX_ECHO = 200  # characters of a refused header quoted back


def allowed_hosts(bind: str, extra: Sequence[str] = ()) -> list[str]:
    """Loopback names, the address the server binds (unless it binds every address), and ``extra``."""
    return [*LOOPBACK, *([] if bind in WILDCARDS else [bind]), *extra]


def guard(app: FastAPI, hosts: Sequence[str], upload_path: str, max_upload: int) -> None:
    """Add the host, origin and upload-size checks to ``app``."""

    @app.middleware("http")
    async def same_origin_writes(request: Request, call_next):
        if request.method not in SAFE_METHODS:
            refused = cross_origin(request.url.scheme, request.headers)
            if refused is not None:
                return _refuse(403, refused)
        if request.method == "POST" and request.url.path == upload_path:
            refused = _upload_length(request.headers.get("content-length"), max_upload)
            if refused is not None:
                return refused
        return await call_next(request)

    app.add_middleware(TrustedHostMiddleware, allowed_hosts=list(hosts))


def same_origin_read(request: Request) -> None:
    """Refuse a read that costs seconds, from another origin, as a write would be (see the module's doc)."""
    refused = cross_origin(request.url.scheme, request.headers, "requests that cost seconds")
    if refused is not None:
        raise HTTPException(403, refused)


ORIGIN_CHECKED = [Depends(same_origin_read)]  # the dependencies of a GET route that costs seconds


def cross_origin(scheme: str, headers, what: str = "writes") -> str | None:
    """Why ``what`` (a write) with these headers, to a server listening with ``scheme``, is refused as another
    origin's request; None for one from the server's own origin or from no browser page."""
    origin = headers.get("origin")
    if origin is not None:
        own = _origin(scheme, HOST.fullmatch(headers.get("host", "")))
        # spaces and tabs around a value are the header's framing, not the value (HTTP servers strip them too)
        if own is not None and _origin(None, ORIGIN.fullmatch(origin.strip(OWS))) == own:
            return None
        ours = f"; this server is {own[0]}://{own[1]}:{own[2]}" if own is not None else ""
        return f"{what} from another origin are refused (Origin: {_echo(origin)}{ours})"
    site = headers.get("sec-fetch-site")
    if site is None or site.strip(OWS).lower() in SAME_ORIGIN_FETCHES:
        return None
    return f"{what} from another site are refused (Sec-Fetch-Site: {_echo(site)})"


def _origin(scheme: str | None, parts: re.Match | None) -> tuple[str, str, int] | None:
    """(scheme, host, port) in one spelling: lower case, the scheme's default port written, IPv6 compressed; None
    for what no origin looks like. ``scheme``: the server's, for a Host header's parts (an origin has its own)."""
    if parts is None:
        return None
    scheme = (scheme or parts["scheme"]).lower()
    host = parts["host"].lower()
    if host.startswith("["):
        try:
            host = f"[{ipaddress.IPv6Address(host[1:-1]).compressed}]"
        except ValueError:
            return None
    port = int(parts["port"]) if parts["port"] else DEFAULT_PORTS.get(scheme)
    if port is None or not 0 < port < 65536:
        return None
    return scheme, host, port


def _echo(value: str) -> str:
    """A header's value quoted back on one line."""
    return ascii(value[:MAX_ECHO])[1:-1]


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
    return pid is None or pid_alive(pid)  # not named by a pid: not ours to judge
