"""The timed lines behind a hit: the words on screen, subtitles or speech of the hit's unit that hold a word of
the query (any of its lines, up to ``MOST_SHOWN``, when none does), so a result says where and when it was read."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import TYPE_CHECKING, Sequence

if TYPE_CHECKING:
    from retrieval.search.results import Hit
    from retrieval.store.catalog import Catalog
    from retrieval.store.catalog.records import TimedLine

MOST_SHOWN = 3  # lines a hit shows when none holds a query word
MOST_MATCHED = 10  # lines a hit shows that hold one
_WORDS = re.compile(r"\w+")


def words(text: str) -> set[str]:
    return {w.casefold() for w in _WORDS.findall(text)}


def with_lines(hits: Sequence[Hit], catalog: Catalog, query: str) -> list[Hit]:
    """``hits`` each with its unit's lines that match ``query`` (``Hit.lines``); hits of units without lines as
    they were."""
    found = catalog.unit_lines([h.unit_id for h in hits]) if hits else {}
    terms = words(query)
    return [replace(h, lines=tuple(as_dict(x) for x in shown_lines(found[h.unit_id], terms)))
            if found.get(h.unit_id) else h for h in hits]


def shown_lines(lines: Sequence[TimedLine], terms: set[str]) -> list[TimedLine]:
    """The lines holding a query term, by time; else the first few."""
    matched = [x for x in lines if words(x.text) & terms]
    return matched[:MOST_MATCHED] if matched else list(lines[:MOST_SHOWN])


def as_dict(line: TimedLine) -> dict:
    return {"source": line.source, "text": line.text, "start": round(line.start, 3), "end": round(line.end, 3),
            "box": list(line.box) if line.box is not None else None,
            "confidence": None if line.confidence is None else round(line.confidence, 4)}
