"""How an index is built, as its catalog records it.

The folder an index covers and its protocol are fixed when it is first built (a later run
that asks for another is refused; the folder moves only when asked); the unit length is kept
for later runs until one changes it (the FAISS settings: ``retrieval.store.vectors.policy``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import numpy as np

from indexers.base import PROTOCOLS
from retrieval.core.segmentation import ShotRule, from_label, segmentation_label
from retrieval.media.frames import spans
from retrieval.media.scan import FoundFile
from retrieval.pipeline.availability import assess
from retrieval.pipeline.plan import needs_prune
from retrieval.store.catalog import Catalog
from retrieval.store.errors import IndexSettingsError

# PROTOCOL: "fast" or "paper", fixed when the index is first built; CAPTIONER: the last --captioner spec
from retrieval.store.index_dir import CAPTIONER, PROTOCOL, WRITTEN_IN  # noqa: F401  (CAPTIONER: its users import it here)

ROOT = "root"  # catalog setting: the folder the index covers (catalog paths are relative to it)
# catalog setting: how units are cut (``retrieval.core.segmentation`` label): "" one unit per file, "10" units of
# 10 s, "shots:content:1:60" shot units; the key keeps its first name so older indexes read the same
SEGMENT = "segment_seconds"
RESEGMENTING = "resegmenting"  # catalog setting: "1" while some files still hold units of an earlier length


def settle_root(catalog: Catalog, folder: Path, found: list[FoundFile], move: bool = False,
                prune: bool = False) -> None:
    """Record ``folder`` (resolved) as the index's root, after checking the run may index it: the folder the
    index covers (another only with ``move``: its videos moved there), and, unless ``prune``, a folder
    that still holds most of the indexed files (files in an offline folder are kept, not forgotten: they do not
    count).  Checked before the run writes anything."""
    stored = catalog.setting(ROOT)
    if stored and Path(stored) != folder and not move:
        raise IndexSettingsError(f"this index covers {stored}, not {folder}; index {stored}, give {folder} its "
                                 f"own --index-dir, or pass --move-root if the videos moved to {folder}")
    moved = bool(stored) and Path(stored) != folder
    # the devices recorded are the old root's folders': moved ones may well be on another device
    recorded = {} if moved else catalog.folder_devices()
    known = catalog.file_states()
    forgetting = len(assess(folder, found, known, recorded).forgotten)
    if not prune and needs_prune(forgetting, len(known)):
        raise IndexSettingsError(f"{forgetting} of the {len(known)} indexed files are not in {folder} (is it "
                                 "mounted?); indexing it would forget them: pass --prune to forget them")
    if moved:
        catalog.forget_folder_devices()
    catalog.set_setting(ROOT, str(folder))
    catalog.set_setting(WRITTEN_IN, str(catalog.path.parent.resolve()))


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
