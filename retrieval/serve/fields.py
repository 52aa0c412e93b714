"""The request fields as HTTP takes them: query parameters and JSON body fields built from the specs the request
values declare (``retrieval.api.request_fields``), so the schema's descriptions and bounds are the CLI's help and
limits; and the bounds only a server needs (a ref's length, how many concepts one request may name).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Path as PathParam
from fastapi import Query
from pydantic import Field, StringConstraints
from starlette.convertors import PathConvertor, register_url_convertor

from retrieval.api import FieldSpec, request_fields
from retrieval.serve.errors import REF_PATTERN

# bounds on what one request may ask: a path no filesystem has, or thousands of concepts holding the engine
MAX_REF_CHARS = 1024
MAX_CONCEPTS = 64
MAX_CONCEPT_CHARS = 200
# a character that is not blank to str.strip() (whose blanks are str.isspace()'s), spelt out: a schema's "\S"
# is ECMA-262's, which takes U+001C-U+001F and U+0085 for text and U+FEFF for a blank
BLANKS = r"\t\n\v\f\r\x1c-\x1f \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
NOT_BLANK = f"[^{BLANKS}]"

Ref = Annotated[str, StringConstraints(min_length=1, max_length=MAX_REF_CHARS, pattern=REF_PATTERN)]
ConceptText = Annotated[str, StringConstraints(min_length=1, max_length=MAX_CONCEPT_CHARS)]
Seconds = Annotated[float, Field(allow_inf_nan=False)]
WhereText = Annotated[str, StringConstraints(min_length=1, max_length=request_fields.WHERE.max_chars)]


def _constraints(spec: FieldSpec, in_body: bool, override: dict) -> dict[str, Any]:
    """The spec's description and bounds as pydantic and FastAPI name them; ``override`` wins (a bound this
    route keeps tighter, an example)."""
    found: dict[str, Any] = {"description": spec.help, "ge": spec.ge, "gt": spec.gt, "le": spec.le}
    if spec.max_items is not None or spec.max_chars is not None:
        found["max_length"] = spec.max_items if spec.max_items is not None else spec.max_chars
    if spec.choices and not in_body:  # a body field names its choices in its type (``choice_type``)
        found["pattern"] = spec.pattern
    found.update(override)
    return {name: value for name, value in found.items() if value is not None}


def query_param(spec: FieldSpec, default: Any, **override: Any) -> Any:
    """A query parameter for the request field ``spec`` describes."""
    return Query(default, **_constraints(spec, False, override))


def body_field(spec: FieldSpec, default: Any, **override: Any) -> Any:
    """A JSON body field for the request field ``spec`` describes."""
    return Field(default, **_constraints(spec, True, override))


class RefConvertor(PathConvertor):
    """A route's ``{ref:ref}``: Starlette's ``path`` without its one gap, a newline (its ``.*`` stops there, and a
    POSIX file name may hold one); the ref's own rule is ``REF_PATTERN``."""

    regex = "(?s:.*)"


register_url_convertor("ref", RefConvertor())


def ref_path(description: str) -> Any:
    """A route's ``{ref:ref}``: a ref as bodies take them (``Ref``)."""
    return PathParam(..., max_length=MAX_REF_CHARS, pattern=REF_PATTERN, description=description)
