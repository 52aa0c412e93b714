"""The FAISS indices an index is searched with, as its catalog configures them.

The FAISS factory string and search parameters are catalog settings, kept for later runs until one
changes them ("" is automatic: chosen by size). Every FAISS index is derived from the catalog, never
the reverse: a saved one is used only while it is current, else one is built from the catalog.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np

from indexers.base import Indexer
from retrieval.core.errors import one_line
from retrieval.store.catalog import Catalog
from retrieval.store.errors import IndexSettingsError
from retrieval.store.vectors import lance_sync
from retrieval.store.vectors import signals as signal_vectors
from retrieval.store.vectors.faiss_index import EXACT_LIMIT, VectorIndex, check_factory, choose_factory, index_path
from retrieval.store.vectors.lance_store import LanceVectors
from retrieval.store.vectors.signals import index_signals

FAISS_FACTORY, FAISS_PARAMS = "faiss_factory", "faiss_params"  # catalog settings; "" = automatic
RecallIndex = VectorIndex | LanceVectors  # what recall searches: both answer ``search`` alike (scores, ids)


def configure_faiss(catalog: Catalog, indexers: Sequence[Indexer], factory: str | None, params: str | None,
                    notices: list[str] | None = None) -> None:
    """Record the FAISS factory string / search parameters this index uses ("auto": chosen by size).

    Checked against every indexer's dimension before it is stored, so a typo fails now, in one
    line, not after hours of embedding, and the previous setting stays. A stored factory past
    ``check_factory``'s bounds, kept from before they were checked, is reset to automatic when
    none is given, said in ``notices``.
    """
    wanted = {key: _setting(catalog, key, given) for key, given in ((FAISS_FACTORY, factory), (FAISS_PARAMS, params))}
    if factory is None and _past_bounds(wanted[FAISS_FACTORY], wanted[FAISS_PARAMS] if params is None else "", notices):
        wanted[FAISS_FACTORY] = ""
        if params is None:  # they were the search parameters of that factory
            wanted[FAISS_PARAMS] = ""
    chosen_factory, chosen_params = wanted[FAISS_FACTORY] or None, wanted[FAISS_PARAMS] or None
    for ix in indexers:
        # with the automatic choice, parameters are for the ANN index it picks once the collection is large
        factory_for_check = chosen_factory or choose_factory(EXACT_LIMIT, ix.dim)
        try:
            VectorIndex.build(np.zeros(0, np.int64), np.zeros((0, ix.dim), np.float32), 0, factory_for_check,
                              chosen_params)
        except (RuntimeError, ValueError) as exc:
            setting = " ".join(filter(None, [chosen_factory or "auto", chosen_params]))
            raise IndexSettingsError(f"FAISS index {setting!r} does not work for {ix.model_id} ({ix.dim}-d): "
                                     f"{one_line(exc, 200)}") from None
    for key, value in wanted.items():
        catalog.set_setting(key, value)


def _past_bounds(stored: str, stored_params: str, notices: list[str] | None) -> bool:
    """Whether the stored factory ``stored`` asks for more than convis builds (said in ``notices``, with the
    ``stored_params`` that go with it)."""
    try:
        check_factory(stored)
    except ValueError as exc:
        dropped = f", without the search parameters {stored_params!r} set for it" if stored_params else ""
        if notices is not None:
            notices.append(f"this index's FAISS index {stored!r} is past what convis builds ({exc}); it now uses the "
                           f"automatic index{dropped} (--faiss-index chooses another)")
        return True
    return False


def _setting(catalog: Catalog, key: str, given: str | None) -> str:
    """The value to store: the one given ("auto" -> "", automatic), else the one stored."""
    if given is None:
        return catalog.setting(key) or ""
    return "" if given.strip().lower() == "auto" else given.strip()


def build_index(catalog: Catalog, indexer: str) -> VectorIndex:
    """One indexer's FAISS index from the catalog: the configured factory, else the size-based choice.

    A configured index that cannot be built yet (an IVF needs more vectors than it has lists
    to train) is replaced by the automatic one until the collection is large enough.
    """
    ids, matrix = signal_vectors.vectors(catalog, indexer)
    factory, params = catalog.setting(FAISS_FACTORY) or None, catalog.setting(FAISS_PARAMS) or None
    if factory or params:
        try:
            return VectorIndex.build(ids, matrix, catalog.generation, factory, params)
        except (RuntimeError, ValueError):
            pass
    return VectorIndex.build(ids, matrix, catalog.generation)


def rebuild_indices(catalog: Catalog, index_dir: Path) -> dict[str, VectorIndex]:
    """Derive every signal's FAISS index (indexers, description signals and CLIPScore) from the catalog and
    replace the files atomically; none for an index that serves from Lance (its tables are appended instead)."""
    built: dict[str, VectorIndex] = {}
    if lance_sync.location(catalog, index_dir) is not None:
        return built
    signals = index_signals(catalog)
    for signal in signals:
        index = build_index(catalog, signal)
        index.save(index_path(index_dir, signal, signals), signal)
        catalog.set_faiss_factory(signal, index.factory)
        built[signal] = index
    return built


def vector_index(catalog: Catalog, index_dir: Path, model_id: str) -> RecallIndex:
    """What recall searches for ``model_id``: its Lance table for an index that serves from Lance, else the saved
    FAISS index if it matches the catalog, else one built from the catalog now (as for a Lance table not written
    yet)."""
    served = lance_sync.reader(catalog, index_dir, model_id)
    if served is not None:
        return served
    signals = index_signals(catalog)
    saved = VectorIndex.load(index_path(index_dir, model_id, signals), model_id)
    if saved is not None and saved.generation == catalog.generation and \
            saved.size == signal_vectors.count(catalog, model_id):
        return saved
    return build_index(catalog, model_id)
