"""How the server refuses a request: a status code and a one-line JSON error, never a traceback or a path.

Messages from lower layers may name files by their absolute paths; a client learns only names relative to the
index root (or bare file names), so the server's folders stay private.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Annotated, Iterable, Mapping, Sequence

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from retrieval.api import ConvisError

# a ref: a path relative to the index root whose parts are neither hidden nor "..", without NUL, or an upload's ref;
# safe_path checks it again, and that it stays inside the root. On Windows a backslash separates parts and "c:"
# names a drive, so neither may appear there (no look-ahead: pydantic's regex engine has none, so the first part
# spells out "not a drive letter and ':'"); on POSIX both are ordinary characters of a file name ("a:b.mp4").
WINDOWS = os.name == "nt"
if WINDOWS:
    RELATIVE = (r"(?:[^./\\\x00A-Za-z][^/\\\x00]*|[A-Za-z](?:[^:/\\\x00][^/\\\x00]*)?)"
                r"(?:/[^./\\\x00][^/\\\x00]*)*")
else:
    RELATIVE = r"[^./\x00][^/\x00]*(?:/[^./\x00][^/\x00]*)*"
REF_PATTERN = rf"^(?:\.uploads/[0-9a-f]{{32}}\.[a-z0-9]{{1,5}}|{RELATIVE})$"
FOLDER_PATTERN = f"^{RELATIVE}$"  # a folder inside the root, by the same rule
REF_RULE = ("not a servable path: give a path relative to the index root, without '..' or hidden parts"
            + (", backslashes or a drive" if WINDOWS else ""))
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
    """Pydantic's errors for a request as plain sentences in one line: "weight of concept 1 must be greater than
    or equal to 0.001", not pydantic's dotted locations and its union branches' names."""
    said = []
    for error in _one_branch_each(errors):
        where = ("the request body" if error.get("type") == "json_invalid"  # its location: a character offset
                 else _where([part for part in error.get("loc", ())[1:] if not _branch(part)]) or "the body")
        said.append(f"{where} {_what(error)}")
    return "; ".join(dict.fromkeys(said)) or "invalid request"


def _branch(part) -> bool:
    # a union's branch in a location: a model's class name (ConceptIn) or a type's tag (constrained-str)
    return isinstance(part, str) and (part[:1].isupper() or part in ("str", "constrained-str"))


# errors saying a value is not of a union branch's type: noise beside the branch that fits it
WRONG_BRANCH = {"model_type", "string_type", "dict_type", "model_attributes_type"}


def _one_branch_each(errors: Sequence[dict]) -> list[dict]:
    """The errors without those of the union branches a value plainly is not (an object is not the text branch);
    when no branch fits, one error for the value."""
    def value_of(error):
        loc = tuple(error.get("loc", ()))
        cut = next((i for i, part in enumerate(loc) if _branch(part)), None)
        return None if cut is None else loc[:cut]

    kept, seen = [], set()
    for error in errors:
        value = value_of(error)
        if value is None:
            kept.append(error)
            continue
        siblings = [e for e in errors if value_of(e) == value]
        fitting = [e for e in siblings if not (e.get("type") in WRONG_BRANCH and _branch(e["loc"][-1]))]
        if value not in seen:
            seen.add(value)
            kept.extend(fitting or [{"loc": value, "type": "union_type", "msg": ""}])
    return kept


def _where(parts: Sequence) -> str:
    """A location in words: ("concepts", 0, "weight") -> "weight of concept 1"."""
    words = ""
    for i, part in enumerate(parts):
        if isinstance(part, int):
            field = str(parts[i - 1]) if i else "item"
            item = f"{field[:-1] if field.endswith('s') else field} {part + 1}"
            words = item if words == field else f"{item} of {words}"
        else:
            words = str(part) if not words else f"{part} of {words}"  # as the schema spells it
    return words


def _what(error: dict) -> str:
    kind, message = error.get("type"), str(error.get("msg", "invalid"))
    if kind == "string_pattern_mismatch":
        return _not_matching(str((error.get("ctx") or {}).get("pattern", "")))
    if kind == "json_invalid":
        at = [part for part in error.get("loc", ()) if isinstance(part, int)]
        return (f"is not valid JSON: {(error.get('ctx') or {}).get('error', message)}"
                + (f" (character {at[-1] + 1})" if at else ""))
    if kind == "union_type":
        return "must be a text or an object as the schema says"
    if kind == "missing":
        return "is required"
    if kind == "extra_forbidden":
        return "is not a field this request takes"
    return re.sub(r"^(?:Input|String|List|Value|Dictionary) should ", "must ", message)


def _not_matching(pattern: str) -> str:
    """Why a text did not match ``pattern``: a ref's rule, or the choices a choice field takes."""
    choices = CHOICES.fullmatch(pattern)
    if choices:
        return "must be one of " + ", ".join(re.sub(r"\\(.)", r"\1", c) for c in choices.group(1).split("|"))
    if pattern in (REF_PATTERN, FOLDER_PATTERN):
        return f"is {REF_RULE}"
    return f"does not have the form the schema gives it ({pattern})"


CHOICES = re.compile(r"\^\(((?:[\w\\.-]+\|)*[\w\\.-]+)\)\$")  # FieldSpec.pattern: ^(a|b|c)$
def without_paths(message: str, named: Iterable[tuple[Path, str]]) -> str:
    """``message`` with each folder in ``named`` shown by its public name and any other absolute path by its
    last part."""
    for folder, shown in named:
        prefix = str(folder)
        message = message.replace(prefix + "/", shown + "/" if shown else "").replace(prefix, shown or ".")
    return ABSOLUTE_PATH.sub(lambda m: m.group(0).rsplit("/", 1)[-1], message)
