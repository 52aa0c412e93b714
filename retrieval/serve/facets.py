"""Facets: for each field a filter may name, the values the index's files hold and how many files hold each, with
the ``where`` condition that keeps them, so the app offers them as chips.  Counted over the listing the server
already keeps for each state of the index (one pass over its files), the most common ``MAX_VALUES`` a field."""

from __future__ import annotations

from collections import Counter
from typing import Iterable, Sequence

from retrieval.serve.tags import TAGS, tags_of

MAX_VALUES = 20  # chips one field offers: the most common values
BUILT_IN = ("folder", "codec", "fps", "width", "height")  # the file's own fields worth a chip (not path, size, ...)


def number_text(value: float) -> str:
    """A number as a condition reads it back exactly: 30 for 30.0, the shortest exact digits otherwise."""
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def _built_in(file, name: str) -> list[str]:
    if name == "folder":
        return [file.path.rsplit("/", 1)[0]] if "/" in file.path else []  # the root's own: no value to name
    value = getattr(file, name, None)
    if value is None or value == "":
        return []
    return [number_text(value) if isinstance(value, (int, float)) else str(value)]


def _user(file, name: str) -> list[str]:
    if name == TAGS:
        return tags_of(file.fields)
    value = file.fields.get(name)
    return [str(value)] if value not in (None, "") else []


def _values(name: str, counts: Counter) -> list[dict]:
    op = "has" if name == TAGS else "="
    return [{"value": value, "count": count, "where": f"{name} {op} {value}"}
            for value, count in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:MAX_VALUES]]


def facets(files: Iterable, names: Sequence[str]) -> dict[str, list[dict]]:
    """Field -> its most common values among the indexed (status ok) files, each with its count of files and the
    condition that keeps them; of ``names`` (GET /fields'), the file's own in ``BUILT_IN`` and the user's; fields
    no file holds a value of are left out."""
    counts: dict[str, Counter] = {name: Counter() for name in dict.fromkeys((*BUILT_IN, *names))}
    for file in files:
        if file.status != "ok":
            continue
        for name, counter in counts.items():
            counter.update(_built_in(file, name) if name in BUILT_IN else _user(file, name))
    return {name: _values(name, counter) for name, counter in counts.items() if counter}
