"""Request bodies are capped before they are read: a JSON body is a few kB, so no request may make the server hold
hundreds of MB of one (a 300 MB body was read whole before its 422).

- Declared: a ``Content-Length`` over the cap is refused with a 413 before a byte of the body is read.
- Streaming: a body without a length (chunked), or longer than it said, stops at the cap while it streams: the
  route reading it gets a 413 instead of the next chunk.
- Uploads count their own, larger limit (``MAX_UPLOAD_BYTES``: guards.py and the upload route's
  ``max_body_size``): the paths in ``own_limit`` pass through.
"""

from __future__ import annotations

from typing import Sequence

from fastapi import HTTPException
from fastapi.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from retrieval.api import ConvisError

MAX_BODY_BYTES = 1 << 20  # the largest body the schema takes (concept and statement lists at their caps) is ~100 kB


class BodyTooLarge(HTTPException, ConvisError):
    """A request body over its cap: refused before (a declared length) or while (streamed) it is read.  An
    HTTPException too: raised while a route reads its body, any other kind reads as "error parsing the body"."""

    exit_code, http_status = 2, 413

    def __init__(self, limit: int, declared: int | None = None) -> None:
        said = f" (Content-Length: {declared})" if declared is not None else ""
        HTTPException.__init__(self, 413, f"request body larger than {_size(limit)}{said}")


class BodyLimit:
    """ASGI middleware: bodies of at most ``limit`` bytes, but on the paths in ``own_limit``."""

    def __init__(self, app: ASGIApp, limit: int = MAX_BODY_BYTES, own_limit: Sequence[str] = ()) -> None:
        self.app, self.limit, self.own_limit = app, limit, tuple(own_limit)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in self.own_limit:
            await self.app(scope, receive, send)
            return
        declared = _content_length(scope)
        if declared is not None and declared > self.limit:
            refused = BodyTooLarge(self.limit, declared)
            await JSONResponse({"error": refused.detail}, status_code=413)(scope, receive, send)
            return
        seen = 0

        async def limited() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.limit:
                    raise BodyTooLarge(self.limit)  # the app's handler answers it as every HTTP error
            return message

        await self.app(scope, limited, send)


def _content_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            return int(value) if value.isdigit() else None
    return None


def _size(limit: int) -> str:
    return f"{limit >> 20} MiB" if limit >= 1 << 20 and not limit % (1 << 20) else f"{limit:,} bytes"
