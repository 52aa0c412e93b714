"""Per-concept vectors of a concept-conditioned indexer (``indexers.conditioned``): one signal per concept.

A conditioned indexer's ordinary vectors are its generic ones (no concept).  Beside them, each unit is embedded
once per concept under the instruction that names it (``Instructions.for_concept``), the five ConViS concepts and
any concept added with ``convis index --concept``: a signal of its own, ``<model id>#<concept key>``, stored as
description signals are (a row of ``description_signals`` and its own FAISS index), so recall and scoring need
nothing new.  Each vector stores a digest of the instruction it was made under, so a changed wording embeds
that concept again and nothing else.

Which indexers are conditioned, and which concepts were added, are catalog settings written before any vector:
a later run (whose indexers the catalog knows and builds only when needed) keeps both without building a model.
A unit's frames are decoded once, as its indexer samples them, for all the concepts it lacks.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from indexers.base import Indexer
from indexers.conditioned import is_conditioned
from retrieval.core.concepts import CONVIS_CONCEPTS, Concept, parse_concept
from retrieval.core.errors import one_line
from retrieval.media.frames import DecodeError
from retrieval.media.video_decoder import VideoDecoder

# named as description signals are ("qwen3-vl-embedding:Qwen/...#location"); a vector stores its instruction's digest
from retrieval.pipeline.description_index import digest, signal_id
from retrieval.store.catalog import Catalog
from retrieval.store.catalog.concept_settings import ADDED, CONDITIONED, added_concepts, conditioned_ids
from retrieval.store.catalog.records import DescriptionSignal, UnitRow
from retrieval.store.errors import IndexSettingsError

CHUNK = 16  # units decoded, embedded and committed together: a killed run loses at most one chunk


class ConceptVectorError(IndexSettingsError):
    """``--concept`` asked of an index that has no concept-conditioned indexer."""


def remember_conditioned(catalog: Catalog, indexers: Sequence[Indexer]) -> None:
    """Record which of this run's built indexers are conditioned (an unbuilt one was recorded when it was)."""
    known = conditioned_ids(catalog)
    new = [ix.model_id for ix in indexers if getattr(ix, "built", True) and is_conditioned(ix)
           and ix.model_id not in known]
    if new:
        catalog.set_setting(CONDITIONED, json.dumps(sorted([*known, *new])))


def add_concepts(catalog: Catalog, concepts: Sequence[Concept]) -> None:
    """Keep ``concepts`` for this run and every later one (a ConViS concept is embedded anyway)."""
    added = added_concepts(catalog)
    added.update({c.key: c.words for c in concepts if c.key not in CONVIS_CONCEPTS})
    catalog.set_setting(ADDED, json.dumps(added, sort_keys=True))


def settle_concepts(catalog: Catalog, indexers: Sequence[Indexer], asked: Sequence[str]) -> None:
    """Record this run's conditioned indexers, then the concepts ``asked`` (``--concept``, free text allowed):
    refused, before any work, by an index with no conditioned indexer to embed them."""
    remember_conditioned(catalog, indexers)
    if not asked:
        return
    concepts = [parse_concept(spec, free_text=True) for spec in asked]
    if not conditioned_of(catalog, indexers):
        raise ConceptVectorError("--concept adds a vector per unit from a concept-conditioned indexer, and this "
                                 "index has none: index with one too (-i qwen3-vl-embedding)")
    add_concepts(catalog, concepts)


def wanted_concepts(catalog: Catalog) -> dict[str, str]:
    """concept key -> words, of every concept each unit gets a vector of: the ConViS five, then those added."""
    return {**{key: key for key in CONVIS_CONCEPTS}, **added_concepts(catalog)}


def instruction_of(indexer: Indexer, key: str, words: str) -> str:
    return indexer.instructions.for_concept(key, words)


def conditioned_of(catalog: Catalog, indexers: Sequence[Indexer]) -> list[Indexer]:
    """Those of ``indexers`` the catalog records as conditioned (asking an unbuilt one would build it)."""
    ids = set(conditioned_ids(catalog))
    return [ix for ix in indexers if ix.model_id in ids]


@dataclass
class Todo:
    """What one conditioned indexer lacks: per unit, the concepts to embed; per signal, the units to drop."""

    indexer: Indexer
    units: dict[int, list[str]] = field(default_factory=dict)
    drop: dict[str, list[int]] = field(default_factory=dict)


def todo(catalog: Catalog, indexer: Indexer) -> Todo:
    """Each unit with the indexer's generic vector and no current vector of some concept (missing, or made under
    another instruction); vectors of units that lost their generic one are dropped."""
    out = Todo(indexer)
    units = set(catalog.vector_sources(indexer.model_id))
    for key, words in wanted_concepts(catalog).items():
        signal, want = signal_id(indexer.model_id, key), digest(instruction_of(indexer, key, words))
        stored = catalog.vector_sources(signal)
        for unit in sorted(u for u in units if stored.get(u) != want):
            out.units.setdefault(unit, []).append(key)
        gone = [u for u in stored if u not in units]
        if gone:
            out.drop[signal] = gone
    return out


def stale(catalog: Catalog, indexers: Sequence[Indexer]) -> list[tuple[str, int]]:
    """(signal, unit id) of each concept vector ``sync`` would make or drop now."""
    out = []
    for ix in conditioned_of(catalog, indexers):
        work = todo(catalog, ix)
        out += [(signal_id(ix.model_id, key), unit) for unit, keys in work.units.items() for key in keys]
        out += [(signal, unit) for signal, units in work.drop.items() for unit in units]
    return out


@dataclass
class SyncCounts:
    embedded: int = 0  # concept vectors made
    units: int = 0  # units decoded for them
    signals: list[str] = field(default_factory=list)  # every concept signal of the index
    notes: list[str] = field(default_factory=list)


Decode = Callable[[Path, UnitRow, Indexer], np.ndarray]


def decode_unit(decoder: VideoDecoder) -> Decode:
    """A unit's frames as ``indexer`` samples them, from the file under ``root``."""
    def decode(path: Path, unit: UnitRow, indexer: Indexer) -> np.ndarray:
        return decoder.sample_span(path, indexer.frame_spec, unit.start, unit.end).pixels
    return decode


def sync(catalog: Catalog, indexers: Sequence[Indexer], root: Path, decode: Decode,
         tick: Callable[[int], None] = lambda n: None) -> SyncCounts:
    """Every concept signal of the conditioned ones of ``indexers`` in step with its instruction and units,
    committed a chunk of units at a time."""
    counts = SyncCounts()
    for ix in conditioned_of(catalog, indexers):
        work = todo(catalog, ix)
        for signal, units in work.drop.items():
            catalog.put_unit_vectors(signal, {}, units)
        if work.units:
            _register(catalog, ix)
        ids = sorted(work.units)
        for start in range(0, len(ids), CHUNK):
            _embed_chunk(catalog, ix, {u: work.units[u] for u in ids[start:start + CHUNK]}, root, decode, counts)
            tick(min(CHUNK, len(ids) - start))
    counts.signals = [row.signal for row in catalog.description_signals()
                      if row.indexer in set(conditioned_ids(catalog)) and row.concept in wanted_concepts(catalog)]
    return counts


def _register(catalog: Catalog, ix: Indexer) -> None:
    for key in wanted_concepts(catalog):
        catalog.register_description_signal(DescriptionSignal(signal_id(ix.model_id, key), ix.model_id, key, ix.dim))


def _embed_chunk(catalog: Catalog, ix: Indexer, keys_of: dict[int, list[str]], root: Path, decode: Decode,
                 counts: SyncCounts) -> None:
    """Decode each unit once, embed it under each concept it lacks, and commit per concept."""
    rows = catalog.units(list(keys_of))
    pixels: dict[int, np.ndarray] = {}
    for unit_id, row in sorted(rows.items()):
        try:
            pixels[unit_id] = decode(root / row.path, row, ix)
        except (DecodeError, OSError) as exc:  # an unreadable or missing file keeps its vectors pending
            counts.notes.append(f"{row.path}: no concept vectors this run: {one_line(exc, 200)}")
    counts.units += len(pixels)
    words = wanted_concepts(catalog)
    for key in sorted({k for keys in keys_of.values() for k in keys}):
        units = [u for u in pixels if key in keys_of[u]]
        if not units:
            continue
        instruction = instruction_of(ix, key, words[key])
        matrix = np.asarray(ix.embed_units([pixels[u] for u in units], instruction), dtype=np.float32)
        catalog.put_unit_vectors(signal_id(ix.model_id, key),
                                 {u: (matrix[i], digest(instruction)) for i, u in enumerate(units)})
        counts.embedded += len(units)
