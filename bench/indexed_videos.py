"""What a benchmark run reads back from its index: each video's vectors per signal, and its caption."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from bench.loaders import base_name
from retrieval.core.signal_kinds import CAPTION
from retrieval.store.catalog import Catalog
from retrieval.store.catalog.concept_settings import conditioned_ids
from retrieval.store.catalog.records import IndexerRow


@dataclass(frozen=True)
class IndexedVideos:
    rows: list[IndexerRow]  # the index's indexers
    vectors: dict[str, dict[str, np.ndarray]]  # signal id -> video base name -> its vector (one unit a video)
    captions: dict[str, str]  # video base name -> the caption its text signals were made from
    # a concept-conditioned indexer's model id -> concept key -> the signal of its vectors made under that concept
    concepts: dict[str, dict[str, str]] = field(default_factory=dict)

    @classmethod
    def read(cls, catalog: Catalog) -> IndexedVideos:
        rows = catalog.indexers()
        described = catalog.description_signals()
        concepts = per_concept_signals(catalog, described)
        signals = [r.indexer for r in rows] + [r.signal for r in described if r.concept == CAPTION]
        signals += [s for by_concept in concepts.values() for s in by_concept.values()]
        paths = ok_paths(catalog)
        vectors = {signal: {base_name(p): v[0] for p in paths if len(v := catalog.unit_vectors(p, signal))}
                   for signal in signals}
        return cls(rows, vectors, captions_by_video(catalog), concepts)


def per_concept_signals(catalog: Catalog, described) -> dict[str, dict[str, str]]:
    """model id -> concept key -> signal, of the index's concept-conditioned indexers' per-concept vectors
    (stored as description signals of that indexer; a text indexer's descriptions are not among them)."""
    conditioned = set(conditioned_ids(catalog))
    out: dict[str, dict[str, str]] = {}
    for row in described:
        if row.indexer in conditioned and row.concept != CAPTION:
            out.setdefault(row.indexer, {})[row.concept] = row.signal
    return out


def ok_paths(catalog: Catalog) -> list[str]:
    return [p for p, s in catalog.file_states().items() if s.status == "ok"]


def captions_by_video(catalog: Catalog) -> dict[str, str]:
    """Video base name -> its caption (a caption file's, else the latest captioner's), one unit a video."""
    texts = catalog.chosen_texts(CAPTION)
    out = {}
    for path in ok_paths(catalog):
        ids = catalog.unit_ids(path)
        if ids and ids[0] in texts:
            out[base_name(path)] = texts[ids[0]]
    return out
