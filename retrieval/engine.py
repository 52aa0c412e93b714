"""The Python API: ``Engine(index_dir).index(folder)`` and ``.query(anchor, concepts)``.

The CLI is a thin layer over this class.
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

import duckdb

# isort: split
# What the CLI reads its option values with (it imports nothing below the engine itself).
from rerankers.base import MODES as MODES
from retrieval.core.errors import ConvisError as ConvisError
from retrieval.core.segmentation import SegmentationError as SegmentationError
from retrieval.core.segmentation import ShotRule as ShotRule
from retrieval.core.segmentation import parse_segment as parse_segment
from retrieval.core.timecode import TimeFormatError as TimeFormatError
from retrieval.core.timecode import parse_time as parse_time
from retrieval.pipeline.settings import IndexSettings as IndexSettings
from retrieval.search.anchor import AnchorSpanError as AnchorSpanError
from retrieval.search.diff import gather_statements as gather_statements
from retrieval.search.signals import parse_overrides as parse_overrides
from retrieval.search.text_query import parse_weights as parse_weights
from retrieval.store.errors import is_damage as is_damage

# isort: split
# What a query, `info` and `ls` need is imported here; what only indexing, describing, reranking, text search
# or building a model needs is imported where it is used, so that a query whose anchor is indexed imports no
# model code (torch, transformers) and no decoder (`convis bench perf` measures the CLI's start-up).
from indexers.factory import create_indexer, has_text_tower  # the registry; a family's module loads when built
from retrieval.core.concepts import CONVIS_CONCEPTS, Concept, parse_concept, parse_concepts
from retrieval.core.defaults import DEFAULT_DIFF_MODEL, DEFAULT_K, INDEX_DIRNAME
from retrieval.core.errors import one_line
from retrieval.core.segmentation import describe as describe_units
from retrieval.core.segmentation import from_label, segmentation_label
from retrieval.core.signal_kinds import CAPTION, CLIPSCORE, parse_signal, vqascore_id
from retrieval.core.timecode import format_span
from retrieval.media.scan import content_hash, find_videos
from retrieval.pipeline.catalog_settings import (
    CAPTIONER,
    PROTOCOL,
    build_index,
    configure_faiss,
    rebuild_indices,
    settle_protocol,
    settle_root,
)
from retrieval.search import ranking, signals
from retrieval.search.anchor import Anchor, AnchorVectors, check_file
from retrieval.search.anchor import AnchorError as AnchorError  # callers import it from here
from retrieval.search.compose import Change, ChangeQuery
from retrieval.search.confidence import Spread, concept_ranges
from retrieval.search.fusion_query import fuse, fusion_label, load_fusion
from retrieval.search.pair_signals import PairSignals
from retrieval.search.rerank import ClipRef, FrameCache, PairScorer, ScoreCache, default_score_cache, rerank
from retrieval.search.results import CompareResult, Hit, QueryResult, shown_path
from retrieval.store import signal_vectors
from retrieval.store.catalog import Catalog, FileListing, IndexerRow, list_files
from retrieval.store.errors import CatalogBusy, CatalogDamaged, CatalogEmpty
from retrieval.store.repair import Restored, restore_snapshot
from retrieval.store.snapshots import CATALOG_NAME, SNAPSHOT_NAME, clock, snapshot_is_current, writer_pid
from retrieval.store.vectors import VectorIndex, check_folder, index_path

if TYPE_CHECKING:
    from indexers.base import Indexer
    from retrieval.pipeline.describe_run import DescribeReport
    from retrieval.pipeline.distribute import Distributor
    from retrieval.pipeline.indexing import Executor, IndexReport, Progress, Scan
    from retrieval.search.diff import DiffRanking, DiffResult, DiffScorer
    from retrieval.search.vqascore import VqaScorer



class NoIndexError(FileNotFoundError):
    """No index where one was expected."""


class NotIndexedError(LookupError):
    """Paths a remove (or its undo) names that the index does not hold as such; nothing was changed."""


def find_index_dir(*starts: Path) -> Path | None:
    """The nearest ``.convis`` folder at or above any of ``starts``."""
    for start in starts:
        start = start.resolve()
        for folder in [start, *start.parents]:
            if (folder / INDEX_DIRNAME / CATALOG_NAME).is_file():
                return folder / INDEX_DIRNAME
    return None


def locate_index(given: Path | None, *near: Path) -> Path:
    """The index folder meant by ``given`` (an index folder, or a video folder holding ``.convis``), else the
    nearest ``.convis`` at or above ``near``; NoIndexError names what was looked for and any index just below."""
    if given is not None:
        for candidate in (given, given / INDEX_DIRNAME):
            if (candidate / CATALOG_NAME).is_file():
                return candidate
        raise NoIndexError(f"no index at {given} (looked for {given / CATALOG_NAME} and "
                           f"{given / INDEX_DIRNAME / CATALOG_NAME}); run `convis index {given}` first")
    found = find_index_dir(*near)
    if found is not None:
        return found
    below = sorted(str(p.parent.parent) for start in near[-1:] for p in start.glob(f"*/{INDEX_DIRNAME}/{CATALOG_NAME}"))
    hint = f"; found {', '.join(below)}: pass one of them" if below else "; run `convis index FOLDER` first"
    raise NoIndexError(f"no {INDEX_DIRNAME} index in {near[-1] if near else Path.cwd()} or above{hint}")


class Engine:
    def __init__(self, index_dir: str | Path | None, device: str | None = None, trust_remote_code: bool = False,
                 rerank_batch: int | None = None):
        # index_dir None: no index (``compare`` needs none; its score cache then lives in the user cache)
        self.index_dir = Path(index_dir) if index_dir is not None else None
        self.device = device
        self.trust_remote_code = trust_remote_code
        self.rerank_batch = rerank_batch  # pairs per LMM forward pass (None: the family's default)
        self._models: dict[tuple[str, str], Indexer] = {}
        self.protocol = "fast"  # the index's (catalog setting "protocol"), read when it is opened
        self.notices: list[str] = []  # one-line messages for the user (e.g. a fallback model)
        self._rerankers: dict = {}
        self._vqa: dict[int, VqaScorer] = {}  # reranker object id -> its VQAScore scorer
        self._scores: ScoreCache | None = None
        self.frames = FrameCache()  # each clip decoded once per engine (one command)
        self.scorer: PairScorer | None = None

    @property
    def catalog_path(self) -> Path | None:
        return self.index_dir / CATALOG_NAME if self.index_dir is not None else None

    @property
    def has_index(self) -> bool:
        return self.catalog_path is not None and self.catalog_path.is_file()

    @property
    def root(self) -> Path:
        """The folder the index covers (paths in the catalog are relative to it)."""
        with self.open_catalog() as catalog:
            stored = catalog.setting("root")
        return Path(stored) if stored else self.index_dir.parent

    # -- models -------------------------------------------------------------
    def indexer(self, spec: str) -> Indexer:
        """The indexer for ``spec``, built once, as the index's protocol builds it."""
        key = (spec, self.protocol)
        if key not in self._models:
            extra = {"trust_remote_code": True} if self.trust_remote_code else {}
            self._models[key] = create_indexer(spec, protocol=self.protocol, device=self.device, **extra)
        return self._models[key]

    # -- indexing -----------------------------------------------------------
    def index(self, folder: str | Path, indexers: Sequence[str] = (), settings: IndexSettings | None = None, *,
              progress: Progress | None = None, distributor: Distributor | None = None) -> IndexReport:
        """Index ``folder`` with ``indexers`` (specs; default: the index's own, else the default indexer)
        as ``settings`` say (segments, captions, frames, workers, Ray, FAISS, protocol: see IndexSettings);
        ``distributor`` decodes instead of this machine's worker processes.  The report's ``seconds`` is
        this call's wall time.  A folder without videos changes nothing: no index is created, an existing
        one is left as it was, and the report says ``found`` 0."""
        from retrieval.pipeline.executors import open_executor
        from retrieval.pipeline.indexing import IndexReport

        started = time.perf_counter()
        settings = settings or IndexSettings()
        if self.index_dir is None:
            raise NoIndexError("indexing needs an index folder")
        folder = Path(folder).resolve()
        if not folder.is_dir():
            raise NotADirectoryError(f"not a folder: {folder}")
        scan = find_videos(folder, skip=self.index_dir.resolve())
        if scan[0]:
            check_folder(self.index_dir)  # before any file is embedded, not at the end of the run
        if scan[0] and self.has_index:
            self._restore_if_damaged(progress)
            # a wrong or half-absent folder is refused before any worker or cluster starts
            with Catalog(self.catalog_path) as catalog:
                settle_root(catalog, folder, scan[0], settings.move_root, settings.prune)
        if scan[0]:
            with open_executor(settings, self.index_dir, distributor, self.device,
                               self.trust_remote_code) as executor:
                report = self._index(folder, scan, indexers, settings, executor, progress)
        else:
            report = IndexReport(list(indexers), failed=scan[1])
        report.seconds = time.perf_counter() - started
        return report

    def _index(self, folder: Path, scan: Scan, indexers: Sequence[str], settings: IndexSettings,
               executor: Executor, progress: Progress | None) -> IndexReport:
        from retrieval.pipeline.indexing import IndexRun
        from retrieval.pipeline.models import run_indexers

        self.index_dir.mkdir(parents=True, exist_ok=True)
        with Catalog(self.catalog_path) as catalog:
            # a new index records its root here; an existing one is checked again, as another run may have
            # written between the check above and this one
            settle_root(catalog, folder, scan[0], settings.move_root, settings.prune)
            self.protocol = settle_protocol(catalog, settings.protocol)
            rows = catalog.indexers()
            specs = list(indexers) or [r.indexer for r in rows] or [self._default_spec(progress)]
            models = run_indexers(specs, rows, self.protocol, lambda spec: self._run_indexer(spec, settings))
            if (settings.captions is not None or settings.captioner) and not any(m.kind == "text" for m in models):
                # captions and descriptions are only searchable with a text indexer
                models += run_indexers(["text"], rows, self.protocol, lambda spec: self._run_indexer(spec, settings))
            configure_faiss(catalog, models, settings.faiss_index, settings.faiss_params)
            # any reranker family describes clips; built once per engine, as for reranking (on Ray, the actors
            # build it: the run's driver never loads it)
            captioner = self.reranker(settings.captioner) if settings.captioner and not settings.ray_address \
                else None
            if settings.captioner:
                catalog.set_setting(CAPTIONER, settings.captioner)  # what `convis describe` asks by default
            return IndexRun(catalog, self.index_dir, models, executor, settings, progress,
                            captioner=captioner).run(folder, scan)

    def _run_indexer(self, spec: str, settings: IndexSettings) -> Indexer:
        """The model for ``spec`` as this run samples with it."""
        from indexers.base import apply_frames

        model = self.indexer(spec)
        apply_frames([model], settings.frames)
        return model

    def _default_spec(self, progress: Progress | None) -> str:
        from indexers.auto import default_indexer

        spec, notice = default_indexer()
        if notice:
            self.notices.append(notice)
            if progress is not None:
                progress("note", {"text": notice})  # before the run starts, where a progress bar shows it
        return spec

    # -- removing -----------------------------------------------------------
    def remove(self, paths: Sequence[str | Path]) -> list[str]:
        """Take indexed files out of the index (rows, vectors; the files stay on disk) and have later runs skip
        them; ``paths`` relative to the root or absolute inside it.  Their root-relative paths, or
        NotIndexedError naming those the index does not list (then nothing is removed)."""
        with self._writing() as catalog:
            rels = self._relative(catalog, paths)
            listed, excluded = catalog.file_states(), set(catalog.excluded())
            unknown = [r for r in rels if r not in listed]
            if unknown:
                again = [r for r in unknown if r in excluded]
                hint = f" ({', '.join(again)} removed already)" if again else ""
                raise NotIndexedError(f"not in the index: {', '.join(unknown)}{hint}")
            catalog.exclude(rels)
            rebuild_indices(catalog, self.index_dir)  # saved FAISS indices must not recall removed units
            catalog.snapshot(self.index_dir / SNAPSHOT_NAME)
        return rels

    def unremove(self, paths: Sequence[str | Path]) -> list[str]:
        """Undo ``remove``: the next run indexes these files again (root-relative paths returned), or
        NotIndexedError naming those that were not removed (then nothing changes)."""
        with self._writing() as catalog:
            rels = self._relative(catalog, paths)
            excluded = set(catalog.excluded())
            unknown = [r for r in rels if r not in excluded]
            if unknown:
                raise NotIndexedError(f"not removed from the index: {', '.join(unknown)}")
            catalog.include(rels)
        return rels

    def _writing(self) -> Catalog:
        """The catalog as its writer (CatalogBusy while an index run holds it)."""
        if not self.has_index:
            raise NoIndexError(f"no index at {self.index_dir}: run `convis index FOLDER` first")
        return Catalog(self.catalog_path)

    def _relative(self, catalog: Catalog, paths: Sequence[str | Path]) -> list[str]:
        """``paths`` as the catalog names them (POSIX, relative to the root), in order, once each."""
        root = Path(catalog.setting("root") or self.index_dir.parent)
        return list(dict.fromkeys(_root_relative(Path(p), root) for p in paths))

    # -- describing ---------------------------------------------------------
    def describe(self, concepts: Sequence[str] | Sequence[Concept] = (), captioner: str | None = None,
                 progress: Progress | None = None, caption_only: bool = False) -> DescribeReport:
        """Have a video LMM describe every indexed unit once for ``concepts`` (ConViS or free text; none: the
        caption and the five ConViS concepts; ``caption_only``: the caption alone), and embed each concept's
        descriptions into its own signal. ``captioner``: any reranker spec; default the last one
        ``index --captioner`` used."""
        from rerankers import describe_prompt
        from retrieval.pipeline.describe_run import NoCaptionerError, describe_index

        if not self.has_index:
            raise NoIndexError(f"no index at {self.index_dir}: run `convis index FOLDER` first")
        wanted = _as_concepts(concepts) if concepts else []
        requests = describe_prompt.concept_requests({c.key: c.words for c in wanted}) if wanted \
            else describe_prompt.caption_requests() if caption_only else describe_prompt.describe_requests()
        with Catalog(self.catalog_path) as catalog:
            spec = captioner or catalog.setting(CAPTIONER)
            if not spec:
                raise NoCaptionerError("this index has no captioner yet: name one with --captioner (any --reranker "
                                       "spec, e.g. qwen2-vl)")
            model = self.reranker(spec)
            catalog.set_setting(CAPTIONER, spec)
            self.protocol = catalog.setting(PROTOCOL) or "fast"
            embedders = self._text_indexers(catalog) + self._caption_towers(catalog)
            root = Path(catalog.setting("root") or self.index_dir.parent)
            return describe_index(catalog, self.index_dir, root, model, requests, embedders, progress)

    def _text_indexers(self, catalog: Catalog) -> list[Indexer]:
        """The index's text indexers (built when first used), or the default one, registered now: descriptions
        are searched through one."""
        from retrieval.pipeline.models import run_indexers

        rows = [r for r in catalog.indexers() if r.kind == "text"]
        if rows:
            return run_indexers([r.indexer for r in rows], rows, self.protocol, self.indexer)
        model = self.indexer("text")
        catalog.register_indexer(IndexerRow(model.model_id, model.name, model.source, model.kind, model.dim,
                                            model.frames_per_unit, None))
        return [model]

    def _caption_towers(self, catalog: Catalog) -> list[Indexer]:
        """The index's CLIP-family indexers (built when first used): they embed the captions for CLIPScore."""
        from retrieval.pipeline.models import run_indexers

        rows = [r for r in catalog.indexers() if r.kind != "text" and has_text_tower(r.name)]
        return run_indexers([r.indexer for r in rows], rows, self.protocol, self.indexer)

    # -- querying -----------------------------------------------------------
    def query(self, anchor: str | Path, concepts: Sequence[str] | Sequence[Concept], k: int = DEFAULT_K,
              start: float | None = None, end: float | None = None, signal_overrides: dict[str, str] | None = None,
              recall_k: int | None = None, reranker=None, rerank_top: int = 20, mode: str = "expected",
              symmetric: bool = False, fusion=None, change: Change | str | None = None,
              most_different: bool = False) -> QueryResult:
        """Recall with the indexed signals; with ``reranker`` (a spec or a Reranker), rerank the top
        ``rerank_top`` candidates by the LMM's per-concept scores and return them reordered; with
        ``fusion`` (a FusionModel, a weights file or "default"), score each concept by the learned
        combination of every available signal; with ``change`` (a ``compose.Change`` or its text), clips like
        the anchor but changed as it says (``retrieval.search.compose``; no concepts: the five ConViS ones); with
        ``most_different``, the same scores ranked the other way: the clips least like the anchor first, recalled
        as the farthest from it."""
        if most_different and change is not None:
            raise signals.SignalError("--most-different ranks clips unlike the anchor and --change clips like it "
                                      "but changed: use one of them")
        return self._query(anchor, concepts, k, start, end, signal_overrides, recall_k, reranker, rerank_top, mode,
                           symmetric, fusion, change=Change(change) if isinstance(change, str) else change,
                           most_different=most_different)

    def _query(self, anchor, concepts, k, start, end, signal_overrides, recall_k, reranker, rerank_top, mode,
               symmetric, fusion, only: str | None = None, change: Change | None = None,
               most_different: bool = False, short_reasons: bool = True) -> QueryResult:
        """``query``; ``only``: keep the units of this content hash alone (``compare`` scores one pair, and asks
        for no ``short_reasons``: why there are fewer than k results)."""
        concepts = _as_concepts(concepts or (CONVIS_CONCEPTS if change is not None else ()))
        clip = Anchor.of(anchor, start, end)
        vector_overrides, pair_overrides = signals.split_pair_signals(signal_overrides or {})
        if change is not None and (fusion is not None or pair_overrides):
            raise signals.SignalError("--change goes with recall signals or a --reranker, not yet with --fusion or "
                                      "a pair signal (vqascore)")
        if pair_overrides and reranker is not None:
            raise signals.SignalError(f"--signal {next(iter(pair_overrides))}=vqascore and --reranker both rescore "
                                      "the shortlist, and the reranker would overwrite VQAScore: use one of them")
        with self.open_catalog() as catalog:
            root = catalog.setting("root") or str(self.index_dir.parent.resolve())
            indexed = {r.name: r.indexer for r in catalog.indexers()}
            self.protocol = catalog.setting(PROTOCOL) or "fast"  # anchors are embedded as the index was
            described = signals.described_concepts(catalog.description_signals(), indexed)
            clipscores = signal_vectors.clipscore_signals(catalog)
            signals.check_concepts(pair_overrides, concepts)
            chosen = signals.choose_all(concepts, indexed, vector_overrides, described,
                                        signals.clipscore_names(clipscores))
            vectors = AnchorVectors(clip, catalog, self.indexer)
            recalled = vectors.per_concept(chosen, indexed)
            # a concept with descriptions is recalled and scored by them too, beside its visual signal
            beside = vectors.descriptions(signals.beside(recalled.signal_of, described, vector_overrides))
            anchors = {**recalled.vectors, **beside.vectors}
            indices = {m: self._vector_index(catalog, m) for m in anchors}
            found_by = ranking.recall(anchors, indices, recall_k or max(100, 10 * k), farthest=most_different)
            if change is not None:  # the change text's and the composed vectors' top lists join the candidates
                wanted = ChangeQuery.prepare(change, indexed, self.indexer,
                                             lambda m: anchors[m] if m in anchors else vectors.visual(m), described)
                for unit, by in wanted.recall(lambda m: self._vector_index(catalog, m),
                                              recall_k or max(100, 10 * k)).items():
                    found_by.setdefault(unit, []).extend(by)
            candidates = sorted(found_by)
            units = catalog.units(candidates)
            # scores come from the catalog's vectors: FAISS only proposes the candidates
            exact = ranking.stored_vectors(catalog, anchors, candidates)
            if fusion is not None:  # the fusion's one `clipscore` input: the one `--signal C=clipscore` means
                preferred = signals.clipscore_names(clipscores).get(CLIPSCORE)
                every = vectors.every_signal(indexed, anchors, [preferred] if preferred else [])
                exact.update(ranking.stored_vectors(catalog, [m for m in every if m not in exact], candidates))
            changed = wanted.scores(candidates, ranking.stored_vectors(catalog, wanted.text_vectors, candidates)) \
                if change is not None else {}
            captions = catalog.chosen_texts(CAPTION) if pair_overrides else {}
            anchor_caption = vectors.caption(captions) if pair_overrides else None
        notices = [*self.notices, *recalled.notices, *beside.notices]
        evidence = ranking.evidence(candidates, anchors, exact, recalled.signal_of, beside.signal_of)
        hits = ranking.rank(evidence, units, concepts, recalled_by=found_by,  # never the anchor itself
                            keep=lambda unit: not clip.overlaps(unit) and only in (None, unit.content_hash))
        hits = ranking.ordered(hits, most_different)
        if change is not None:  # staying like the anchor, and matching the change
            hits = wanted.rescore(hits, changed)
            notices += wanted.notices
        pair = PairSignals(clip.clip, anchor_caption, captions, concepts)
        if pair_overrides:  # the shortlist, best first by its new scores: what is cut at k next
            hits = ranking.ordered(self._pair_signals(pair, hits[:rerank_top], pair_overrides, notices), most_different)
        if reranker is not None:
            asked = [*concepts, wanted.question] if change is not None else concepts
            shortlist = self._rerank(clip.clip, hits[:rerank_top], asked, reranker, mode, symmetric, notices)
            if change is not None:  # the reranker's ratings: of the concepts (stay) and of the change
                shortlist = wanted.reranked(shortlist, concepts)
        else:
            shortlist = hits[:max(k, rerank_top)] if fusion is not None else hits[:k]
        if fusion is not None:
            sims = ranking.similarities([h.unit_id for h in shortlist], every, exact)
            shortlist, fusion_notices = fuse(shortlist, concepts, load_fusion(fusion), pair.with_values(sims),
                                             self._reranker_name(reranker), beside.signal_of)
            notices += fusion_notices
        notices += _signal_notices(concepts, shortlist, recalled.signal_of, indexed, reranker, beside.signal_of)
        if short_reasons:
            notices += _short_reasons(k, hits, candidates, units, clip)
        # the pool the final scores were given to: every recalled candidate, or the shortlist a model rescored
        pool = shortlist if reranker is not None or fusion is not None or pair_overrides else hits
        return QueryResult(shown_path(anchor, root), concepts, recalled.signal_of,
                           ranking.ranked(shortlist, most_different)[:k],
                           notices, reranker=None if reranker is None else self.scorer.reranker.model_id,
                           fusion=None if fusion is None else fusion_label(fusion), root=root, start=start, end=end,
                           empty_reason=None if hits else _why_empty(candidates, units), beside=beside.signal_of,
                           pair_signals=pair.used, change=None if change is None else {
                               "text": change.text, "weight": change.weight, "signals": sorted(wanted.text_vectors),
                               "composed": sorted(wanted.composed)}, most_different=most_different,
                           spread=Spread.of((h.total for h in pool), descending=not most_different),
                           ranges=concept_ranges([h.scores for h in pool], [c.key for c in concepts]))

    def _pair_signals(self, pair: PairSignals, hits: list[Hit], wanted: dict[str, str], notices: list[str]
                      ) -> list[Hit]:
        """``hits`` with each concept in ``wanted`` (concept -> ``vqascore[:MODEL]``) scored by that pair signal;
        a concept whose anchor has no caption keeps its recall scores, with a notice."""
        if pair.anchor_caption is None:
            notices.append(f"{', '.join(wanted)}: VQAScore asks about the anchor's caption, and the anchor has none "
                           "in the index (a new file, a time window, or not captioned); scored by its recall signal")
            return hits
        for key, spec in wanted.items():
            kind = parse_signal(spec)
            scorer = self.vqa_scorer(kind.model, notices)
            hits = pair.score(hits, key, vqascore_id(kind.model), scorer, self.root)
            self._model_notices(notices, scorer.model)
        if pair.uncaptioned:
            notices.append(f"{pair.uncaptioned} candidate(s) have no caption in the index, so no VQAScore: they "
                           "rank last (index with --captions or --captioner)")
        return hits

    def search(self, text: str, k: int = DEFAULT_K, weights: dict[str, float] | None = None,
               recall_k: int | None = None, concept: str | None = None) -> QueryResult:
        """Rank indexed units by how well they match ``text``, with every indexed signal that has a text tower
        (``weights``: indexer name -> weight, else equal), or with ``concept``'s descriptions only (a ConViS
        concept or free text, as ``describe`` named it); see ``retrieval.search.text_query``."""
        from retrieval.search import text_query

        key = None if concept is None else parse_concept(concept, free_text=True).key
        with self.open_catalog() as catalog:
            self.protocol = catalog.setting(PROTOCOL) or "fast"  # the text towers of the models the index used
            result = text_query.search(text_query.TextQuery(text, k, weights, recall_k, key), catalog, self.indexer,
                                       lambda model_id: self._vector_index(catalog, model_id))
        return replace(result, notices=[*self.notices, *result.notices],
                       root=result.root or str(self.index_dir.parent.resolve()))

    def _reranker_name(self, spec) -> str | None:
        """The registry name of the reranker a query used (its fusion signal), None without one."""
        return None if spec is None else self.scorer.reranker.name

    # -- reranking ----------------------------------------------------------
    def reranker(self, spec):
        """A Reranker built once per engine (specs are names, hub ids or folders)."""
        from rerankers.base import Reranker
        from rerankers.factory import create_reranker

        if isinstance(spec, Reranker):
            return spec
        if spec not in self._rerankers:
            self._rerankers[spec] = create_reranker(spec, device=self.device, batch_size=self.rerank_batch)
        return self._rerankers[spec]

    def _model_notices(self, notices: list[str], model=None) -> None:
        """The reranker's own lines (precision fallback, smaller batches after running out of memory)."""
        model = model or (self.scorer.reranker if self.scorer is not None else None)
        notices.extend(n for n in getattr(model, "notices", []) if n not in notices)

    def pair_scorer(self, spec, mode: str, symmetric: bool, notices: list[str]) -> PairScorer:
        model = self.reranker(spec)
        if self.scorer is None or self.scorer.reranker is not model or (self.scorer.mode, self.scorer.symmetric) \
                != (mode, symmetric):
            self.scorer = PairScorer(model, self._score_cache(notices), self.frames, mode, symmetric)
        return self.scorer

    def vqa_scorer(self, spec, notices: list[str] | None = None) -> VqaScorer:
        """VQAScore with the LMM ``spec`` (or a Reranker), built once per engine, sharing its score cache and
        decoded frames (its ``questions_asked`` counts this engine's model calls)."""
        from retrieval.search.vqascore import VqaScorer

        model = self.reranker(spec)
        if id(model) not in self._vqa:
            self._vqa[id(model)] = VqaScorer(model, self._score_cache(self.notices if notices is None else notices),
                                             self.frames)
        return self._vqa[id(model)]

    def _score_cache(self, notices: list[str]) -> ScoreCache | None:
        if self._scores is None:
            path = default_score_cache(self.index_dir if self.has_index else None)
            try:
                self._scores = ScoreCache(path)
            except (duckdb.IOException, OSError) as exc:
                notices.append(f"score cache {path} unavailable ({one_line(exc, 120)}); not caching")
                return None
        return self._scores

    def _rerank(self, anchor: ClipRef, hits: list[Hit], concepts: list[Concept], spec, mode: str,
                symmetric: bool, notices: list[str]) -> list[Hit]:
        scorer = self.pair_scorer(spec, mode, symmetric, notices)
        reranked = rerank(scorer, anchor, hits, concepts, self.root)
        self._model_notices(notices)  # e.g. a precision fallback, or smaller batches after running out of memory
        return reranked

    # -- compare ------------------------------------------------------------
    def compare(self, a: str | Path, b: str | Path, concepts: Sequence[str] | Sequence[Concept], reranker=None,
                mode: str = "expected", symmetric: bool = False, *, signal_overrides: dict[str, str] | None = None,
                a_span: tuple[float | None, float | None] = (None, None), b_start: float | None = None
                ) -> CompareResult:
        """Per-concept similarity of one pair of clips (0-1), and their Eq. 2 combination: the LMM's answers
        when a ``reranker`` is given (whole files), else the index's signals, exactly as a query for ``a``
        (over ``a_span``) scores ``b``, which must be indexed (``b_start`` picks its unit; default its best)."""
        concepts = _as_concepts(concepts)
        if reranker is None:
            return self._compare_by_signals(a, b, concepts, signal_overrides, a_span, b_start)
        pair = tuple(ClipRef(str(p), content_hash(p)) for p in (check_file(a, "video"), check_file(b, "video")))
        notices: list[str] = []
        scorer = self.pair_scorer(reranker, mode, symmetric, notices)
        answers = {c.key: scorer.score([pair], c)[0] for c in concepts}
        self._model_notices(notices)
        root = str(self.root) if self.has_index else None
        return CompareResult.answered(shown_path(a, root), shown_path(b, root), scorer.reranker.model_id, mode,
                                      symmetric, concepts, answers, scorer.model_pairs, tuple(notices), root)

    def _compare_by_signals(self, a: str | Path, b: str | Path, concepts: list[Concept], overrides: dict | None,
                            a_span: tuple[float | None, float | None], b_start: float | None) -> CompareResult:
        wanted = content_hash(check_file(b, "video"))
        with self.open_catalog() as catalog:
            units = catalog.summary()["units"]
            if not catalog.files_by_hash(wanted):
                raise signals.SignalError(f"{Path(b).name} is not in the index at {self.index_dir}, so its "
                                          "signals cannot score it: index it, or ask an LMM (--reranker)")
        # every unit recalled, so b's rank too; a pair signal (an LMM per pair) is asked about b's units alone
        asks_model = bool(signals.split_pair_signals(overrides or {})[1])
        result = self._query(a, concepts, k=units, start=a_span[0], end=a_span[1], signal_overrides=overrides,
                             recall_k=units, reranker=None, rerank_top=units, mode="expected", symmetric=False,
                             fusion=None, only=wanted if asks_model else None, short_reasons=False)
        hit = next((h for h in result.hits if h.content_hash == wanted and
                    (b_start is None or abs(h.start - b_start) < 1e-3)), None)  # best first: b's best unit
        if hit is None:
            raise signals.SignalError(f"{Path(b).name} is not an indexed clip other than the anchor")
        compared = CompareResult.from_query(result.anchor, shown_path(b, result.root), result, hit)
        return replace(compared, rank=None) if asks_model else compared  # ranked among b's units only

    # -- differences in words (VidDiff) ---------------------------------------------------------------
    def diff_scorer(self, reranker, mode: str = "expected", symmetric: bool = False, fps: float | None = None,
                    notices: list[str] | None = None) -> DiffScorer:
        """Which-video questions and open lists of differences, asked of ``reranker`` through this engine's score
        cache and decoded frames; ``fps``: frames at that fixed rate instead of the family's rule."""
        from rerankers.base import check_mode
        from rerankers.diff_prompt import DiffInputError
        from retrieval.search.diff import DiffScorer

        check_mode(mode)
        if fps is not None and not (math.isfinite(fps) and fps > 0):
            raise DiffInputError(f"--fps must be a positive number of frames a second, got {fps}")
        return DiffScorer(self.reranker(reranker), self._score_cache(self.notices if notices is None else notices),
                          self.frames, mode, symmetric, fps)

    def diff(self, a: str | Path, b: str | Path, action: str, statements: dict[str, str] | None = None,
             most: int | None = None, reranker=DEFAULT_DIFF_MODEL, mode: str = "expected", symmetric: bool = False,
             fps: float | None = None, a_span: tuple[float, float | None] = (0.0, None),
             b_span: tuple[float, float | None] = (0.0, None)) -> DiffResult:
        """What differs between clips ``a`` and ``b`` performing ``action``: closed mode (``statements``, key ->
        text: which clip each is more true of) or open mode (``most``: the LMM proposes up to that many)."""
        from rerankers.diff_prompt import DiffInputError, check_action
        from retrieval.search.diff import diff_pair

        action = check_action(action)  # before a model is built: a bad action is the user's line, not a load error
        notices: list[str] = []
        first, second = (self._diff_clip(path, span) for path, span in ((a, a_span), (b, b_span)))
        if first.key == second.key:
            raise DiffInputError(f"{Path(a).name} and {Path(b).name} are the same video (same content and span): "
                             "there is nothing to tell apart")
        scorer = self.diff_scorer(reranker, mode, symmetric, fps, notices)
        result = diff_pair(scorer, first, second, self._shown(a, b), action, statements, most)
        self._model_notices(notices, scorer.reranker)
        return replace(result, notices=tuple(notices))

    def diff_rank(self, reference: str | Path, candidates: Sequence[str | Path], action: str,
                  statements: dict[str, str] | None = None, most: int | None = None, reranker=DEFAULT_DIFF_MODEL,
                  mode: str = "expected", symmetric: bool = False, fps: float | None = None,
                  progress=None) -> DiffRanking:
        """``candidates`` ranked by how much each differs from ``reference`` (most different first): the sum over
        the statements (given, or each candidate's own proposed ones) of how surely the LMM tells the two apart.
        A candidate with the reference's content is not asked and ranks last, with a notice."""
        from rerankers.diff_prompt import check_action
        from retrieval.search.diff import DiffRanking, diff_pair, rank_by_difference

        action = check_action(action)
        notices: list[str] = []
        ref = self._diff_clip(reference, (0.0, None))
        scorer = self.diff_scorer(reranker, mode, symmetric, fps, notices)
        results = []
        for done, path in enumerate(candidates):
            clip = self._diff_clip(path, (0.0, None))
            shown = self._shown(reference, path)
            if clip.key == ref.key:
                notices.append(f"{shown[1]} is the same video as the reference: not asked, ranked last")
                results.append((shown[1], clip.path, None))
            else:
                results.append((shown[1], clip.path, diff_pair(scorer, ref, clip, shown, action, statements, most)))
            if progress is not None:
                progress(done + 1, len(candidates))
        self._model_notices(notices, scorer.reranker)
        return DiffRanking(self._shown(reference, reference)[0], action,
                           tuple(rank_by_difference(results)), scorer.model_calls, tuple(notices))

    def _diff_clip(self, path: str | Path, span: tuple[float, float | None]) -> ClipRef:
        checked = check_file(path, "video")
        return ClipRef(str(checked), content_hash(checked), float(span[0] or 0.0), span[1])

    def _shown(self, *paths) -> tuple[str, ...]:
        root = str(self.root) if self.has_index else None
        return tuple(shown_path(p, root) for p in paths)

    def _vector_index(self, catalog: Catalog, model_id: str) -> VectorIndex:
        """The saved FAISS index if it matches the catalog, else one built from the catalog now."""
        saved = VectorIndex.load(index_path(self.index_dir, model_id))
        if saved is not None and saved.generation == catalog.generation and \
                saved.size == signal_vectors.count(catalog, model_id):
            return saved
        return build_index(catalog, model_id)

    # -- info ---------------------------------------------------------------
    def info(self) -> dict:
        with self.open_catalog() as catalog:
            summary = catalog.summary()
            summary["indexers"] = [
                {"indexer": r.indexer, "kind": r.kind, "dim": r.dim, "frames": r.frames, "faiss": r.faiss_factory}
                for r in catalog.indexers()
            ]
            # signals made from two stored ones (a CLIP-family model's video and caption vectors)
            summary["cross_modal_signals"] = sorted(signal_vectors.clipscore_signals(catalog).values())
            summary["root"] = catalog.setting("root")
            summary["protocol"] = catalog.setting(PROTOCOL) or "fast"
            seconds, shots = from_label(summary.pop("segment_seconds", None))
            summary["segment_seconds"] = seconds  # null: one unit per file, or shot units
            summary["segmentation"] = segmentation_label(seconds, shots)
            summary["units_by"] = describe_units(seconds, shots)
            summary["shots"] = catalog.shot_summary() if shots is not None else None
        summary["index_dir"] = str(self.index_dir.resolve())
        return summary

    def files(self) -> list[FileListing]:
        """Every file the index knows, ok or failed, with its units (what `convis ls` lists)."""
        with self.open_catalog() as catalog:
            return list_files(catalog)

    def open_catalog(self) -> Catalog:
        """The catalog, read-only: its published snapshot when that is current (readers then never hold the
        catalog file, which would keep an index run out), else the file itself, briefly; while an index run
        holds it, or when it is damaged, the last snapshot, with a notice."""
        if not self.has_index:
            raise NoIndexError(f"no index at {self.index_dir}: run `convis index FOLDER` first")
        snapshot = self.index_dir / SNAPSHOT_NAME
        try:
            writing = writer_pid(self.catalog_path) is not None and snapshot.is_file()
            if writing or snapshot_is_current(self.catalog_path, snapshot):
                try:
                    if writing:
                        self.notices.append(f"an index run is in progress; results reflect its state at "
                                            f"{clock(snapshot)}")
                    return Catalog(snapshot, read_only=True)
                except (CatalogDamaged, CatalogEmpty):
                    pass  # read the catalog itself
            return Catalog(self.catalog_path, read_only=True)
        except CatalogEmpty:
            raise NoIndexError(f"nothing is indexed in {self.index_dir} yet: run `convis index FOLDER`") from None
        except CatalogBusy:
            if not snapshot.is_file():
                raise CatalogBusy(f"an index run is writing {self.index_dir} and has not published a snapshot "
                                  "yet; retry in a minute") from None
            self.notices.append(f"an index run is in progress; results reflect its state at {clock(snapshot)}")
        except CatalogDamaged as damaged:
            if not snapshot.is_file():
                raise
            self.notices.append(f"{damaged}; reading the snapshot meanwhile")
        return Catalog(snapshot, read_only=True)

    # -- repair -------------------------------------------------------------
    def repair(self) -> Restored | None:
        """Restore a damaged catalog from its snapshot (the damaged file is kept aside); None when it is whole."""
        if not self.has_index:
            raise NoIndexError(f"no index at {self.index_dir}: run `convis index FOLDER` first")
        try:
            Catalog(self.catalog_path).close()  # the writer lock: no index run is writing it meanwhile
        except CatalogDamaged:
            return restore_snapshot(self.catalog_path)
        return None

    def _restore_if_damaged(self, progress: Progress | None) -> None:
        restored = self.repair()
        if restored is not None:
            self.notices.append(str(restored))
            if progress is not None:
                progress("note", {"text": str(restored)})


def _signal_notices(concepts: list[Concept], hits: list[Hit], signal_of: dict[str, str], indexed: dict[str, str],
                    reranker, beside: dict[str, str]) -> list[str]:
    """What to know about the concepts that indexed signals alone scored (neither reranked nor fused)."""
    if reranker is not None:
        return []
    alone = [c for c in concepts if not any(c.key in hit.contributions for hit in hits)]
    return signals.scoring_notices(alone, signal_of, indexed, beside)


def _short_reasons(k: int, hits: list[Hit], candidates: list[int], units: dict, clip: Anchor) -> list[str]:
    """Why a query gives fewer than ``k`` results, when it does and there are any (none: ``_why_empty``)."""
    if not hits or len(hits) >= k:
        return []
    own = sum(1 for u in candidates if u in units and clip.overlaps(units[u]))
    why = f"{len(hits)} results, not {k}: "
    if own:
        span = "the whole file" if clip.whole else format_span(clip.start or 0.0, clip.end)
        return [why + f"{own} unit(s) are the anchor itself ({span} of {clip.path.name}) and a query never returns "
                      "its own anchor; give the anchor a time window to search the rest of that file"]
    return [why + "that is every unit the index could recall"]


def _root_relative(path: Path, root: Path) -> str:
    """``path`` relative to ``root``: as given when relative, else by its place under the root (as written, or
    with links resolved: the root is stored resolved)."""
    if not path.is_absolute():
        if ".." in path.parts:
            raise NotIndexedError(f"not a path inside the indexed folder: {path}")
        return path.as_posix()
    for candidate, base in ((Path(os.path.abspath(path)), root), (path.resolve(), root.resolve())):
        if candidate.is_relative_to(base):
            return candidate.relative_to(base).as_posix()
    raise NotIndexedError(f"{path} is not inside the indexed folder {root}")


def _why_empty(candidates: list[int], units: dict) -> str:
    if not candidates:
        return "the index holds no vectors to recall from"
    files = {unit.path for unit in units.values()}
    return (f"every unit recalled ({len(candidates)}, from {', '.join(sorted(files)[:3])}) is part of the anchor "
            "itself, and a query never returns its own anchor; index more videos")


def _as_concepts(concepts) -> list[Concept]:
    if concepts and all(isinstance(c, Concept) for c in concepts):
        return list(concepts)
    return parse_concepts(list(concepts))

