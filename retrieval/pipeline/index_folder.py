"""An index run over a folder: its checks before any model or worker starts, then the run itself.

A folder without videos changes nothing: no index is created, an existing one is left as it was, and the report
says ``found`` 0.  A wrong or half-absent folder is refused before any worker or cluster starts.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from retrieval.media.scan import find_videos
from retrieval.pipeline import line_sources
from retrieval.pipeline.catalog_settings import CAPTIONER, settle_protocol, settle_root
from retrieval.pipeline.settings import IndexSettings
from retrieval.store.catalog import Catalog
from retrieval.store.index_dir import NoIndexError, has_index, protocol_of, repair
from retrieval.store.snapshots import CATALOG_NAME
from retrieval.store.vectors.faiss_index import check_folder
from retrieval.store.vectors.lance_sync import configure_store
from retrieval.store.vectors.policy import configure_faiss

if TYPE_CHECKING:
    from indexers.base import Indexer
    from retrieval.model_cache import ModelCache
    from retrieval.pipeline.distribute import Distributor
    from retrieval.pipeline.progress import Progress
    from retrieval.pipeline.run import Executor, IndexReport, Scan


def index_folder(index_dir: Path | None, models: ModelCache, folder: str | Path, indexers: Sequence[str] = (),
                 settings: IndexSettings | None = None, progress: Progress | None = None,
                 distributor: Distributor | None = None, notices: list[str] | None = None) -> IndexReport:
    """Index ``folder`` into ``index_dir`` (see ``Engine.index``); what the user should know goes to ``notices``."""
    from retrieval.pipeline.executors import open_executor
    from retrieval.pipeline.run import IndexReport

    started = time.perf_counter()
    settings = settings or IndexSettings()
    notices = [] if notices is None else notices
    if index_dir is None:
        raise NoIndexError("indexing needs an index folder")
    folder = Path(folder).resolve()
    if not folder.is_dir():
        raise NotADirectoryError(f"not a folder: {folder}")
    scan = find_videos(folder, skip=index_dir.resolve())
    if scan[0]:
        check_folder(index_dir)  # before any file is embedded, not at the end of the run
    protocol = settings.protocol
    if scan[0] and has_index(index_dir):
        _restore_if_damaged(index_dir, progress, notices)
        # a wrong or half-absent folder is refused before any worker or cluster starts
        with Catalog(index_dir / CATALOG_NAME) as catalog:
            settle_root(catalog, folder, scan[0], settings.move_root, settings.prune)
            protocol = protocol or protocol_of(catalog)
    if scan[0] and settings.captioner:
        from rerankers.factory import check_protocol

        check_protocol([settings.captioner], protocol or "fast")  # a captioner the protocol refuses: before any work
    if scan[0]:
        with open_executor(settings, index_dir, distributor, models.device, models.trust_remote_code) as executor:
            run = _Run(index_dir, models, settings, progress, notices)
            report = run.index(folder, scan, indexers, executor)
        models.export_text_towers(notices)  # while torch is loaded: the text queries after this need none
    else:
        report = IndexReport(list(indexers), failed=scan[1])
    report.seconds = time.perf_counter() - started
    return report


class _Run:
    """One run's settings and the models it builds."""

    def __init__(self, index_dir: Path, models: ModelCache, settings: IndexSettings, progress: Progress | None,
                 notices: list[str]):
        self.index_dir, self.models, self.settings = index_dir, models, settings
        self.progress, self.notices = progress, notices
        self.protocol = "fast"

    def index(self, folder: Path, scan: Scan, indexers: Sequence[str], executor: Executor) -> IndexReport:
        from retrieval.pipeline import concept_index
        from retrieval.pipeline.models import run_indexers
        from retrieval.pipeline.run import IndexRun

        settings = self.settings
        self.index_dir.mkdir(parents=True, exist_ok=True)
        with Catalog(self.index_dir / CATALOG_NAME) as catalog:
            # a new index records its root here; an existing one is checked again, as another run may have
            # written between the check above and this one
            settle_root(catalog, folder, scan[0], settings.move_root, settings.prune)
            self.protocol = settle_protocol(catalog, settings.protocol)
            rows = catalog.indexers()
            # line sources of their own pass (speech) are split off; frame readers (ocr) are indexers of the decode
            asked, sources = line_sources.split_specs(indexers)
            specs = asked or [r.indexer for r in rows] + line_sources.frame_reader_specs(catalog) or \
                [self._default_spec()]
            models = run_indexers(specs, rows, self.protocol, self._indexer)
            concept_index.settle_concepts(catalog, models, settings.concepts)
            line_sources.remember(catalog, line_sources.asked_of(specs, models, sources))
            if (settings.captions is not None or settings.captioner) and not any(m.kind == "text" for m in models):
                # captions and descriptions are only searchable with a text indexer
                models += run_indexers(["text"], rows, self.protocol, self._indexer)
            # line readers (ocr) store no vectors: no FAISS index to check for them
            configure_faiss(catalog, [m for m in models if m.kind != "lines"], settings.faiss_index,
                            settings.faiss_params, self.notices)
            configure_store(catalog, settings.store)  # FAISS or Lance: the run's publishes write the one kept
            # any reranker family describes clips; built once per engine, as for reranking (on Ray, the actors
            # build it: the run's driver never loads it)
            captioner = self.models.captioner(settings.captioner, self.protocol) if settings.captioner and \
                not settings.ray_address else None
            if settings.captioner:
                catalog.set_setting(CAPTIONER, settings.captioner)  # what `convis describe` asks by default
            return IndexRun(catalog, self.index_dir, models, executor, settings, self.progress,
                            captioner=captioner, device=self.models.device).run(folder, scan)

    def _indexer(self, spec: str) -> Indexer:
        """The model for ``spec`` as this run samples with it."""
        from indexers.base import apply_frames

        model = self.models.indexer(spec, self.protocol)
        apply_frames([model], self.settings.frames)
        return model

    def _default_spec(self) -> str:
        from indexers.auto import default_indexer

        spec, notice = default_indexer()
        if notice:
            self.notices.append(notice)
            if self.progress is not None:
                self.progress("note", {"text": notice})  # before the run starts, where a progress bar shows it
        return spec


def _restore_if_damaged(index_dir: Path, progress: Progress | None, notices: list[str]) -> None:
    restored = repair(index_dir)
    if restored is not None:
        notices.append(str(restored))
        if progress is not None:
            progress("note", {"text": str(restored)})
