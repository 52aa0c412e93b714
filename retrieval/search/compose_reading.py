"""A composed query's change read against one index: the anchor's stored texts, the text indexer that reads
them, and the request scored with the concepts the change leaves to stay (``change_reading`` has the rules)."""

from __future__ import annotations

from dataclasses import replace
from typing import Callable

from retrieval.core.concepts import Concept, normalise
from retrieval.core.signal_kinds import CAPTION
from retrieval.search.anchor import AnchorVectors
from retrieval.search.change_reading import CAPTION_TEXT, ChangeReading, read_change, sides, text_label
from retrieval.search.requests import QueryRequest
from retrieval.store.catalog import Catalog


def read_anchor_change(request: QueryRequest, catalog: Catalog, vectors: AnchorVectors, indexed: dict[str, str],
                       described: dict[str, str], tower: Callable, notices: list[str],
                       editor: Callable | None = None) -> tuple[ChangeReading | None, QueryRequest]:
    """The change read by the index's text indexer, and the request with the concepts it touched left out of
    stay (as it came with -c, or when the index has no text indexer to read with, with a notice); ``editor``
    (``change_edits.LmmEditor``) edits the anchor's texts, else the rule does."""
    text = indexed.get("text")
    if text is None:
        notices.append("the change was not read against the concepts (the index has no text indexer: index with "
                       "--captions or --captioner), so every concept stays")
        return None, request
    texts = anchor_texts(catalog, vectors, described)
    reading = read_change(request.change.text, {c.key: c.words for c in request.concepts}, request.named,
                          tower(text).embed_texts, texts, editor)
    notices += unedited_notices(request.change.text, reading, bool(texts))
    if not reading.left:
        return reading, request
    stay = [c for c in request.concepts if c.key in reading.stay]
    weights = normalise([c.weight for c in stay])
    return reading, replace(request, concepts=tuple(Concept(c.key, c.words, w) for c, w in zip(stay, weights,
                                                                                            strict=True)))


def anchor_texts(catalog: Catalog, vectors: AnchorVectors, described: dict[str, str]) -> dict[str, str]:
    """The anchor's caption and its description of each described concept, where the index holds them (an
    anchor indexed whole as one unit)."""
    if vectors.stored_path is None:  # a time window, or a file the index does not hold: no stored texts
        return {}
    units = catalog.unit_ids(vectors.stored_path)  # the anchor's own: not every unit's texts
    found = {name: vectors.caption(catalog.chosen_texts(key, units=units))
             for name, key in [(CAPTION_TEXT, CAPTION), *((c, c) for c in described)]}
    return {name: text for name, text in found.items() if text}


def unedited_notices(change: str, reading: ChangeReading, has_texts: bool) -> list[str]:
    """Why the anchor's texts were not edited: the change names nothing it replaces, or a text lacks its words."""
    if not has_texts or not reading.unedited:
        return []
    split = sides(change)
    if split.old is None:
        return ["the change names nothing it replaces ('A instead of B', 'replace B with A', 'swap B for A'), so "
                f"the anchor's {', '.join(text_label(n) for n in reading.unedited)} were not edited: the change "
                "text alone reads them"]
    return [f"the anchor's {text_label(name)} does not hold '{split.old}', so it was not edited"
            for name in reading.unedited]


def edited_signals(reading: ChangeReading | None, indexed: dict[str, str], described: dict[str, str]
                   ) -> tuple[dict[str, str], tuple[str, ...]]:
    """(signal -> the anchor's text there, edited: the caption in the text indexer's, a description in its
    concept's; the signals of the touched concepts' descriptions among them)."""
    if reading is None:
        return {}, ()
    signal = {CAPTION_TEXT: indexed.get("text"), **described}
    edited = {signal[name]: text for name, text in reading.edited.items() if signal.get(name)}
    touched = {t.concept for t in reading.touches}
    return edited, tuple(described[c] for c in reading.edited if c in touched and c in described)
