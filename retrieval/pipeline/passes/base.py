"""An index pass: one stage of an index run after the files are embedded (after NeMo Curator's processing stages).

A pass says what is pending in the catalog (``pending``), gets ready (``setup``: a context in which it runs, or
says it has nothing to run with), and runs (``run``), returning its ``Counts``.  Every pass reads and writes the
catalog only, so it is incremental and resumable as the run is: what it commits stays, and the next run finds
less pending.  Passes are registered in order (``passes.registry``); ``IndexRun`` runs each once a run.
"""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Callable, ClassVar, Sized

from retrieval.pipeline.progress import Progress, silent
from retrieval.pipeline.settings import IndexSettings

if TYPE_CHECKING:
    from indexers.base import Indexer
    from retrieval.lmm.captioning import Describer
    from retrieval.store.catalog import Catalog
    from retrieval.store.catalog.records import DescriberKey


@dataclass
class Counts:
    """What a pass did in a run.  Each field is a key of the index report (``convis index --json``), so a
    field's name says what it counts across passes; a key two passes count is their sum there."""

    def as_dict(self) -> dict:
        """The counts by report key, then the keys ``derived`` computes from them."""
        return {**{f.name: getattr(self, f.name) for f in fields(self)}, **self.derived()}

    def derived(self) -> dict:
        """Report keys computed from the counts (a rate): none unless a pass says so."""
        return {}


@dataclass
class PassContext:
    """What a pass may use of its run: the catalog and folders, the run's models and settings, and the run's
    ways to speak (``note``, ``progress``) and to make its work searchable at once (``publish``)."""

    catalog: Catalog
    index_dir: Path
    root: Path
    settings: IndexSettings = IndexSettings()
    visual: list[Indexer] = field(default_factory=list)  # the run's image and video indexers
    textual: list[Indexer] = field(default_factory=list)  # its text indexers
    executor: object = None  # where the run decodes and embeds; may offer workers for a pass (``describer``)
    captioner: Describer | None = None  # a video LMM built in this process, if the run was asked for one
    device: str | None = None  # where a pass's own model runs (None: the best there is)
    note: Callable[[str], None] = lambda text: None
    progress: Progress = silent
    publish: Callable[[], None] = lambda: None
    described_by: DescriberKey | None = None  # the captioner's key, once the descriptions pass ran it


class IndexPass:
    """One stage after embedding.  A subclass names itself, its counts, and fills in ``pending`` and ``run``."""

    name: ClassVar[str]
    counts: ClassVar[type[Counts]] = Counts

    def pending(self, ctx: PassContext) -> Sized:
        """What this pass would do in the catalog now (files, units, signals): empty when it is done."""
        raise NotImplementedError

    def setup(self, ctx: PassContext) -> AbstractContextManager[bool]:
        """Get ready to run (load a model, start workers): a context in which the pass runs, entered as True,
        or False when it has nothing to run with (no recogniser asked for, no captioner)."""
        return nullcontext(True)

    def run(self, ctx: PassContext) -> Counts:
        """Do what is pending and commit it; what it did."""
        raise NotImplementedError


def run_pass(index_pass: IndexPass, ctx: PassContext) -> Counts:
    """One pass in its setup: its counts (all zero when it had nothing to run with)."""
    with index_pass.setup(ctx) as ready:
        return index_pass.run(ctx) if ready else index_pass.counts()
