"""Tags as the app shows and edits them: the user field ``tags``, a comma-separated list (``convis tag FILE --set
tags=goal,corner``; a filter ``tags has goal`` matches one item), one list of short words per file."""

from __future__ import annotations

from typing import Annotated, Iterable

from pydantic import Field, StringConstraints

from retrieval.serve.errors import RequestBody
from retrieval.serve.fields import BLANKS

TAGS = "tags"  # the user field the app reads and writes
MAX_TAG_CHARS = 64
MAX_TAGS_CHANGED = 32  # tags one request adds or removes
# no comma, and no blank at either end by str.strip()'s rule, spelt out (a schema's "\s" is not Python's: fields.py)
Tag = Annotated[str, StringConstraints(min_length=1, max_length=MAX_TAG_CHARS,
                                       pattern=rf"^[^,{BLANKS}](?:[^,]*[^,{BLANKS}])?$")]


class TagsIn(RequestBody):
    add: list[Tag] = Field([], max_length=MAX_TAGS_CHANGED, description="Tags to give the file (no comma).",
                           examples=[["goal"]])
    remove: list[Tag] = Field([], max_length=MAX_TAGS_CHANGED, description="Tags to take from it.")


def tags_of(fields: dict) -> list[str]:
    """The file's tags, in the order given, each once."""
    text = fields.get(TAGS)
    return list(dict.fromkeys(t.strip() for t in str(text).split(",") if t.strip())) if text else []


def changed(tags: Iterable[str], add: Iterable[str], remove: Iterable[str]) -> list[str]:
    """``tags`` with ``add`` appended (those not there yet) and ``remove`` taken out."""
    gone = set(remove)
    return [t for t in dict.fromkeys([*tags, *add]) if t not in gone]


def tag_change(tags: list[str]) -> tuple[list[str], list[str]]:
    """The ``Engine.tag`` assignments and unsets that store ``tags`` (none: the field is removed)."""
    return ([f"{TAGS}={','.join(tags)}"], []) if tags else ([], [TAGS])


def retag(state, ref: str, body: TagsIn) -> dict:
    """Change the tags of the file ``ref`` as ``body`` asks (``state``: the server's); its tags after the change."""
    held = next((f.fields for f in state.files() if f.path == ref), {})
    tags = changed(tags_of(held), body.add, body.remove)
    state.engine.tag([ref], *tag_change(tags))
    return {"path": ref, "tags": tags}
