"""How the server refuses a request: a status code and a one-line JSON error, never a traceback or a path.

Messages from lower layers may name files by their absolute paths; a client learns only names relative to the
index root (or bare file names), so the server's folders stay private.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Iterable, Mapping, Sequence

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from retrieval.core.errors import ConvisError

# a ref: a path relative to the index root whose parts are neither hidden nor "..", with no backslash or NUL
# (not absolute, not a drive), or an upload's ref; safe_path checks it again, and that it stays inside the root
# (no look-ahead: pydantic's regex engine has none, so the first part spells out "not a drive letter and ':'")
RELATIVE = (r"(?:[^./\\\x00A-Za-z][^/\\\x00]*|[A-Za-z](?:[^:/\\\x00][^/\\\x00]*)?)"
            r"(?:/[^./\\\x00][^/\\\x00]*)*")
REF_PATTERN = rf"^(?:\.uploads/[0-9a-f]{{32}}\.[a-z0-9]{{1,5}}|{RELATIVE})$"
FOLDER_PATTERN = f"^{RELATIVE}$"  # a folder inside the root, by the same rule
REF_RULE = ("not a servable path: give a path relative to the index root, without '..', hidden parts, "
            "backslashes or a drive")
# a path of two or more parts from the filesystem root; not a URL ("http://a/b") nor a relative "a/b"
ABSOLUTE_PATH = re.compile(r"(?<![\w:/.~-])(?:/[^\s/'\"()\[\],;:]+){2,}")


class ApiError(ConvisError):
    """A request the server refuses: its status code and a one-line reason."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.http_status = status
        self.exit_code = 1 if status >= 500 else 2

    def public(self, remedies: Mapping[str, str] | None = None) -> str:
        return str(self)  # worded for the client where it was raised


class RequestBody(BaseModel):
    """A JSON request body is taken as its schema says, or refused with 422: values of the very types it names
    (``0`` is not a boolean, ``"5"`` not a number; an integer is a number) and no field it does not name (the
    schema says ``additionalProperties: false``), so a misspelt option is never silently ignored."""

    model_config = ConfigDict(strict=True, extra="forbid")


def _whole(value):
    # JSON Schema's "integer" is a number without a fraction, 5.0 as well as 5; strict validation takes 5 only
    return int(value) if type(value) is float and value.is_integer() else value


Whole = Annotated[int, BeforeValidator(_whole)]  # an integer field of a RequestBody: 5 or 5.0, never 5.5 or "5"


class ErrorOut(BaseModel):
    """Every refusal's body."""

    error: str = Field(..., description="One line saying what was wrong and, where it helps, what to do.")
    retry_after: int | None = Field(None, description="Seconds to wait before retrying (with 503 only).")


WHY = {
    400: "The request is malformed (a body that is not UTF-8 JSON, a multipart body) or names something the "
         "server cannot use: a malformed path, a concept that is a likely typo, a time span outside the clip.",
    403: "Refused: a path leading outside the index root, or a write from another web site.",
    404: "No such file, upload or frame.",
    413: "The upload is larger than the server's --max-upload-mb.",
    415: "The upload is not a video the server can decode.",
    422: "The request does not fit this schema: a missing or malformed field, a value of another type or out of "
         "its bounds, a field the schema does not name.",
    503: "The index is busy or missing, a model could not be loaded, or the server is answering as many requests "
         "as it queues; retry after the seconds Retry-After gives (when given).",
    507: "No space left on the index's disk; what was stored before stays whole.",
}
RETRY_AFTER = {"Retry-After": {"description": "Seconds to wait before asking again (as `retry_after`).",
                               "schema": {"type": "integer", "minimum": 1}}}


def responses(*codes: int) -> dict:
    """``responses=`` for a route: the error statuses it may answer, each with the error body (a 503 also with
    its Retry-After header)."""
    return {code: {"model": ErrorOut, "description": WHY[code], **({"headers": RETRY_AFTER} if code == 503 else {})}
            for code in codes}


def validation_message(errors: Sequence[dict]) -> str:
    """Pydantic's errors for a request in one line: where, and what is wrong there."""
    said = []
    for error in errors:
        where = ".".join(str(part) for part in error.get("loc", ())[1:]) or "body"
        what = REF_RULE if error.get("type") == "string_pattern_mismatch" else error.get("msg", "invalid")
        said.append(f"{where}: {what}")
    return "; ".join(said) or "invalid request"


def without_paths(message: str, named: Iterable[tuple[Path, str]]) -> str:
    """``message`` with each folder in ``named`` shown by its public name and any other absolute path by its
    last part."""
    for folder, shown in named:
        prefix = str(folder)
        message = message.replace(prefix + "/", shown + "/" if shown else "").replace(prefix, shown or ".")
    return ABSOLUTE_PATH.sub(lambda m: m.group(0).rsplit("/", 1)[-1], message)
