"""How an index is built, as its catalog records it, and the FAISS indices built that way.

The folder an index covers and its protocol are fixed when it is first built (a later run
that asks for another is refused; the folder moves only when asked); the unit length, the
FAISS factory string and search parameters are kept for later runs until one changes them.
Every FAISS index is derived from the catalog, never the reverse.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from indexers.base import PROTOCOLS, Indexer
from retrieval.core.errors import ConvisError, one_line
from retrieval.core.segmentation import ShotRule, from_label, segmentation_label
from retrieval.media.frames import spans
from retrieval.media.scan import FoundFile
from retrieval.pipeline.plan import gone, needs_prune
from retrieval.store import signal_vectors
from retrieval.store.catalog import Catalog
from retrieval.store.vectors import EXACT_LIMIT, VectorIndex, choose_factory, index_path

ROOT = "root"  # catalog setting: the folder the index covers (catalog paths are relative to it)
PROTOCOL = "protocol"  # catalog setting: "fast" or "paper", fixed when the index is first built
FAISS_FACTORY, FAISS_PARAMS = "faiss_factory", "faiss_params"  # catalog settings; "" = automatic
# catalog setting: how units are cut (``retrieval.core.segmentation`` label): "" one unit per file, "10" units of
# 10 s, "shots:content:1:60" shot units; the key keeps its first name so older indexes read the same
SEGMENT = "segment_seconds"
RESEGMENTING = "resegmenting"  # catalog setting: "1" while some files still hold units of an earlier length
CAPTIONER = "captioner"  # catalog setting: the last --captioner spec, which `convis describe` asks by default


class IndexSettingsError(ConvisError, ValueError):
    """The run asks for what the index refuses: settings that contradict how it was built, another folder,
    or forgetting most of its files."""

    exit_code, http_status = 2, 400


def settle_root(catalog: Catalog, folder: Path, found: list[FoundFile], move: bool = False,
                prune: bool = False) -> None:
    """Record ``folder`` (resolved) as the index's root, after checking the run may index it: the folder the
    index covers (another only with ``move``: its videos moved there), and, unless ``prune``, a folder
    that still holds most of the indexed files.  Checked before the run writes anything."""
    stored = catalog.setting(ROOT)
    if stored and Path(stored) != folder and not move:
        raise IndexSettingsError(f"this index covers {stored}, not {folder}; index {stored}, give {folder} its "
                                 f"own --index-dir, or pass --move-root if the videos moved to {folder}")
    known = catalog.file_states()
    forgetting = len(gone(found, known))
    if not prune and needs_prune(forgetting, len(known)):
        raise IndexSettingsError(f"{forgetting} of the {len(known)} indexed files are not in {folder} (is it "
                                 "mounted?); indexing it would forget them: pass --prune to forget them")
    catalog.set_setting(ROOT, str(folder))


def settle_protocol(catalog: Catalog, wanted: str | None) -> str:
    """The protocol this run indexes with: the one asked for, else the index's; one index, one protocol."""
    stored = catalog.setting(PROTOCOL)
    if wanted is not None and wanted not in PROTOCOLS:
        raise IndexSettingsError(f"unknown protocol {wanted!r}; use one of {', '.join(PROTOCOLS)}")
    if stored is None:
        # an index built before protocols were recorded was built the fast way
        stored = "fast" if catalog.indexers() else (wanted or "fast")
        catalog.set_setting(PROTOCOL, stored)
    if wanted is not None and wanted != stored:
        raise IndexSettingsError(f"this index was built with --protocol {stored}; use the same protocol or a "
                                 "new --index-dir")
    return stored


def settle_segments(catalog: Catalog, asked: float | None,
                    shots: ShotRule | None = None) -> tuple[float | None, ShotRule | None]:
    """How this run cuts units, as (unit length, shot rule): the shot rule asked for, else the length asked for
    (0: one unit per file), else the index's own.  ``shots`` must name its detector ("auto" resolved);
    ``auto_shots`` keeps the detector the index records.

    A new way is recorded at once and the index marked as re-segmenting until every file has
    its new units: a run stopped half-way leaves the rest with their old ones, and the next run,
    with or without ``--segment``, carries on.
    """
    stored = catalog.setting(SEGMENT)
    if shots is not None:
        wanted = shots.label
    elif asked is None and stored is not None:
        wanted = stored
    else:
        wanted = segmentation_label(asked, None)
    if stored is not None and stored != wanted:
        catalog.set_setting(RESEGMENTING, "1")
    catalog.set_setting(SEGMENT, wanted)
    return from_label(wanted)


def auto_shots(catalog: Catalog, rule: ShotRule, choose: Callable[[], str]) -> ShotRule:
    """An "auto" shot rule with its detector: the one the index was cut with, so that a run on another machine
    (or with other lengths) does not switch detectors; else ``choose()``."""
    if rule.detector != "auto":
        return rule
    _, stored = from_label(catalog.setting(SEGMENT))
    return rule.resolved(stored.detector if stored is not None else choose())


def resegmenting(catalog: Catalog) -> bool:
    return catalog.setting(RESEGMENTING) == "1"


def finish_resegmenting(catalog: Catalog) -> None:
    catalog.set_setting(RESEGMENTING, "")


def stale_units(catalog: Catalog, seconds: float | None, shots: ShotRule | None = None) -> set[str]:
    """Indexed files whose units are not the ones this run cuts: shot units by another rule, or fixed units of
    another length (files cut at shots are stale for any fixed length)."""
    stale = set()
    for path, (duration, units, cut_by) in catalog.unit_spans().items():
        if shots is not None or cut_by.startswith("shots"):
            if cut_by != segmentation_label(seconds, shots):
                stale.add(path)
            continue
        wanted = [(span.start, span.end) for span in spans(duration, seconds)]
        if len(wanted) != len(units) or not np.allclose(wanted, units, rtol=0, atol=1e-6):
            stale.add(path)
    return stale


def configure_faiss(catalog: Catalog, indexers: Sequence[Indexer], factory: str | None, params: str | None) -> None:
    """Record the FAISS factory string / search parameters this index uses ("auto": chosen by size).

    Checked against every indexer's dimension before it is stored, so a typo fails now, in one
    line, not after hours of embedding, and the previous setting stays.
    """
    wanted = {key: _setting(catalog, key, given) for key, given in ((FAISS_FACTORY, factory), (FAISS_PARAMS, params))}
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
    replace the files atomically."""
    built = {}
    signals = [row.indexer for row in catalog.indexers()] + [row.signal for row in catalog.description_signals()]
    signals += list(signal_vectors.clipscore_signals(catalog).values())
    for signal in signals:
        index = build_index(catalog, signal)
        index.save(index_path(index_dir, signal))
        catalog.set_faiss_factory(signal, index.factory)
        built[signal] = index
    return built
