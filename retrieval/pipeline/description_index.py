"""Per-concept description signals: a text indexer's vectors of each concept's descriptions.

Every concept that some unit has a readable description of (from a captioner, ``convis describe`` or a
``<stem>.<concept>.txt`` file) becomes a signal of its own, ``<text model id>#<concept>``, with its
vectors in the catalog and its own FAISS index: a query for that concept, or a text search of it, is a
vector search, and no model is asked at query time.

The vectors are derived data, kept in step with the descriptions by ``sync``: each vector stores a
digest of the text it was made from, so only units whose description changed are embedded again, and
units that lost theirs (forgotten, re-indexed with other units) lose their vector.

Timed lines are signals of their own the same way, one a line source (``<text model id>#ocr``, ``#subtitle``,
``#speech``): a unit's lines of that source, joined by time, embedded as one text; ``convis search --concept
ocr`` searches them by meaning where keyword search matches their words.

When several sources describe a unit, its vector is made from, in order: a ``<stem>.<concept>.txt`` file
(a person's own words), the models in ``prefer`` (the run's captioner), then the latest stored answer.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Callable, Iterator, Sequence

import numpy as np

from indexers.base import Indexer
from indexers.errors import ModelUnavailableError
from indexers.factory import has_text_tower
from retrieval.core.errors import one_line
from retrieval.core.signal_kinds import CAPTION
from retrieval.store.catalog import Catalog
from retrieval.store.catalog.records import LINE_SOURCES, DescriberKey, DescriptionSignal

SEPARATOR = "#"  # model ids never hold one: "text:sentence-transformers/all-MiniLM-L6-v2#location"
CHUNK = 256  # descriptions embedded and committed together: a killed run loses at most one chunk


def signal_id(indexer: str, concept: str) -> str:
    """The signal of ``concept``'s descriptions as the text indexer ``indexer`` (a model id) embeds them."""
    return f"{indexer}{SEPARATOR}{concept}"


def split_signal(signal: str) -> tuple[str, str] | None:
    """(text indexer model id, concept) of a description signal; None for any other signal."""
    indexer, sep, concept = signal.rpartition(SEPARATOR)
    return (indexer, concept) if sep and indexer and concept else None


def digest(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8")).hexdigest()[:16]


def chosen_texts(catalog: Catalog, concept: str, prefer: Sequence[DescriberKey] = ()) -> dict[int, str]:
    """unit id -> the description of ``concept`` its vector is made from (see the module's notes)."""
    return catalog.chosen_texts(concept, prefer)


@dataclass
class SyncCounts:
    embedded: int = 0  # descriptions embedded
    removed: int = 0  # vectors removed (their unit lost its description)
    signals: list[str] = field(default_factory=list)  # the concept description signals the index now has
    caption_signals: list[str] = field(default_factory=list)  # CLIP-family text vectors of the captions
    notes: list[str] = field(default_factory=list)  # models that could not embed text, and why


def sync(catalog: Catalog, indexers: Sequence[Indexer], prefer: Sequence[DescriberKey] = ()) -> SyncCounts:
    """Bring every description signal of ``indexers`` in step with the stored descriptions: a text indexer
    embeds each concept's descriptions; a CLIP-family indexer (a visual one with a text tower) embeds the
    captions, CLIPScore's text half. Other indexers have none."""
    counts = SyncCounts()
    for ix, concept, texts in _wanted(catalog, indexers, prefer):
        try:
            _sync_one(catalog, ix, concept, texts(), counts)
        except ModelUnavailableError as exc:
            if ix.kind == "text":
                raise
            # a CLIP-family indexer whose weights have no usable text tower: the run goes on
            counts.notes.append(f"{ix.model_id} cannot embed the captions, so it gives no CLIPScore: "
                                f"{one_line(exc, 200)}")
    rows = catalog.description_signals()
    text = {row.indexer for row in catalog.indexers() if row.kind == "text"}  # not a conditioned model's concepts
    counts.signals = [row.signal for row in rows if row.concept != CAPTION and row.indexer in text]
    counts.caption_signals = [row.signal for row in rows if row.concept == CAPTION]
    return counts


def stale(catalog: Catalog, indexers: Sequence[Indexer], prefer: Sequence[DescriberKey] = ()) -> list[tuple[str, int]]:
    """(signal, unit id) of each vector ``sync`` would make or drop now: its text is new, changed or gone."""
    out = []
    for ix, concept, texts in _wanted(catalog, indexers, prefer):
        signal = signal_id(ix.model_id, concept)
        todo, drop = _changes(catalog, signal, texts())
        out += [(signal, u) for u in [*todo, *drop]]
    return out


def _wanted(catalog: Catalog, indexers: Sequence[Indexer], prefer: Sequence[DescriberKey]
            ) -> Iterator[tuple[Indexer, str, Callable[[], dict[int, str]]]]:
    """(indexer, concept or line source, its texts by unit id when asked) of every signal ``indexers`` have."""
    known = {row.signal: row for row in catalog.description_signals()}
    for ix in indexers:
        if ix.kind == "text":
            mine = {row.concept for row in known.values() if row.indexer == ix.model_id}
            for concept in sorted((set(catalog.described_concepts()) | mine) - set(LINE_SOURCES)):
                yield ix, concept, lambda concept=concept: chosen_texts(catalog, concept, prefer)
            for source in sorted(set(catalog.line_sources()) | (mine & set(LINE_SOURCES))):
                yield ix, source, lambda source=source: catalog.source_texts(source)
        elif has_text_tower(ix.name):
            yield ix, CAPTION, lambda: chosen_texts(catalog, CAPTION, prefer)


def _changes(catalog: Catalog, signal: str, texts: dict[int, str]) -> tuple[list[int], list[int]]:
    """(units to embed, units to drop) of ``signal``: digests of the wanted texts against the stored ones."""
    wanted = {unit_id: digest(text) for unit_id, text in texts.items()}
    stored = catalog.vector_sources(signal)
    return [u for u in sorted(wanted) if stored.get(u) != wanted[u]], [u for u in stored if u not in wanted]


def _sync_one(catalog: Catalog, ix: Indexer, concept: str, texts: dict[int, str], counts: SyncCounts) -> None:
    """The signal of ``concept`` (a described concept, or a line source) made of ``texts`` (unit id -> text)."""
    signal = signal_id(ix.model_id, concept)
    todo, drop = _changes(catalog, signal, texts)
    if drop:
        catalog.put_unit_vectors(signal, {}, drop)
        counts.removed += len(drop)
    for start in range(0, len(todo), CHUNK):
        chunk = todo[start:start + CHUNK]
        matrix = np.asarray(ix.embed_texts([texts[u] for u in chunk]), dtype=np.float32)
        catalog.register_description_signal(DescriptionSignal(signal, ix.model_id, concept, int(matrix.shape[1])))
        catalog.put_unit_vectors(signal, {u: (matrix[i], digest(texts[u])) for i, u in enumerate(chunk)})
        counts.embedded += len(chunk)
