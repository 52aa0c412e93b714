"""The Python API: ``Engine(index_dir).index(folder)`` and ``.query(anchor, concepts)``.

The CLI is a thin layer over this class.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Sequence

import duckdb

from indexers.auto import default_indexer
from indexers.base import Indexer, apply_frames
from indexers.factory import create_indexer
from rerankers.base import Reranker
from rerankers.factory import create_reranker
from retrieval.core.concepts import Concept, parse_concepts
from retrieval.core.errors import one_line
from retrieval.media.scan import content_hash
from retrieval.pipeline.catalog_settings import PROTOCOL, build_index, configure_faiss, settle_protocol
from retrieval.pipeline.distribute import Distributor
from retrieval.pipeline.executors import open_executor
from retrieval.pipeline.indexing import SNAPSHOT_NAME, Executor, IndexReport, IndexRun, Progress
from retrieval.pipeline.settings import IndexSettings
from retrieval.search import ranking, signals
from retrieval.search.anchor import Anchor, AnchorVectors, check_file
from retrieval.search.anchor import AnchorError as AnchorError  # callers import it from here
from retrieval.search.fusion_query import fuse, fusion_label, load_fusion
from retrieval.search.rerank import ClipRef, FrameCache, PairScorer, ScoreCache, default_score_cache, rerank
from retrieval.search.results import CompareResult, Hit, QueryResult
from retrieval.store.catalog import Catalog, CatalogBusy, CatalogEmpty
from retrieval.store.vectors import VectorIndex, index_path

INDEX_DIRNAME = ".convis"
CATALOG_NAME = "catalog.duckdb"


class NoIndexError(FileNotFoundError):
    """No index where one was expected."""


def find_index_dir(*starts: Path) -> Path | None:
    """The nearest ``.convis`` folder at or above any of ``starts``."""
    for start in starts:
        start = start.resolve()
        for folder in [start, *start.parents]:
            if (folder / INDEX_DIRNAME / CATALOG_NAME).is_file():
                return folder / INDEX_DIRNAME
    return None


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
        ``distributor`` decodes instead of this machine's worker processes."""
        settings = settings or IndexSettings()
        if self.index_dir is None:
            raise NoIndexError("indexing needs an index folder")
        folder = Path(folder).resolve()
        if not folder.is_dir():
            raise NotADirectoryError(f"not a folder: {folder}")
        self.index_dir.mkdir(parents=True, exist_ok=True)
        with open_executor(settings, self.index_dir, distributor, self.device, self.trust_remote_code) as executor:
            return self._index(folder, indexers, settings, executor, progress)

    def _index(self, folder: Path, indexers: Sequence[str], settings: IndexSettings, executor: Executor,
               progress: Progress | None) -> IndexReport:
        with Catalog(self.catalog_path) as catalog:
            catalog.set_setting("root", str(folder))
            self.protocol = settle_protocol(catalog, settings.protocol)
            specs = list(indexers) or [f"{r.name}:{r.source}" for r in catalog.indexers()] or [self._default_spec()]
            models = [self.indexer(s) for s in specs]
            apply_frames(models, settings.frames)
            if settings.captions is not None and not any(m.kind == "text" for m in models):
                models.append(self.indexer("text"))  # captions are only useful with a text indexer
            configure_faiss(catalog, models, settings.faiss_index, settings.faiss_params)
            return IndexRun(catalog, self.index_dir, models, executor, settings, progress).run(folder)

    def _default_spec(self) -> str:
        spec, notice = default_indexer()
        if notice:
            self.notices.append(notice)
        return spec

    # -- querying -----------------------------------------------------------
    def query(self, anchor: str | Path, concepts: Sequence[str] | Sequence[Concept], k: int = 10,
              start: float | None = None, end: float | None = None, signal_overrides: dict[str, str] | None = None,
              recall_k: int | None = None, reranker=None, rerank_top: int = 20, mode: str = "expected",
              symmetric: bool = False, fusion=None) -> QueryResult:
        """Recall with the indexed signals; with ``reranker`` (a spec or a Reranker), rerank the top
        ``rerank_top`` candidates by the LMM's per-concept scores and return them reordered; with
        ``fusion`` (a FusionModel, a weights file or "default"), score each concept by the learned
        combination of every available signal."""
        concepts = _as_concepts(concepts)
        clip = Anchor.of(anchor, start, end)
        with self.open_catalog() as catalog:
            indexed = {r.name: r.indexer for r in catalog.indexers()}
            self.protocol = catalog.setting(PROTOCOL) or "fast"  # anchors are embedded as the index was
            chosen = {c.key: signals.choose(c.key, indexed, signal_overrides) for c in concepts}
            vectors = AnchorVectors(clip, catalog, self.indexer)
            recalled = vectors.per_concept(chosen, indexed)
            indices = {m: self._vector_index(catalog, m) for m in set(recalled.signal_of.values())}
            candidates = sorted(ranking.recall(recalled.vectors, indices, recall_k or max(100, 10 * k)))
            units = catalog.units(candidates)
            if fusion is not None:
                every = vectors.every_signal(indexed, recalled.vectors)
                indices.update({m: indices.get(m) or self._vector_index(catalog, m) for m in every})
        notices = [*self.notices, *recalled.notices]
        hits = ranking.rank(ranking.score(candidates, recalled.vectors, indices, recalled.signal_of), units,
                            concepts, keep=lambda unit: not clip.overlaps(unit))  # never the anchor itself
        if reranker is not None:
            shortlist = self._rerank(clip.clip, hits[:rerank_top], concepts, reranker, mode, symmetric, notices)
        else:
            shortlist = hits[:max(k, rerank_top)] if fusion is not None else hits[:k]
        if fusion is not None:
            shortlist, fusion_notices = fuse(shortlist, concepts, load_fusion(fusion), ranking.similarities(
                [h.unit_id for h in shortlist], every, indices), self._reranker_name(reranker))
            notices += fusion_notices
        return QueryResult(str(anchor), concepts, recalled.signal_of, ranking.ranked(shortlist)[:k], notices,
                           reranker=None if reranker is None else self.scorer.reranker.model_id,
                           fusion=None if fusion is None else fusion_label(fusion))

    def _reranker_name(self, spec) -> str | None:
        """The registry name of the reranker a query used (its fusion signal), None without one."""
        return None if spec is None else self.scorer.reranker.name

    # -- reranking ----------------------------------------------------------
    def reranker(self, spec):
        """A Reranker built once per engine (specs are names, hub ids or folders)."""
        if isinstance(spec, Reranker):
            return spec
        if spec not in self._rerankers:
            self._rerankers[spec] = create_reranker(spec, device=self.device, batch_size=self.rerank_batch)
        return self._rerankers[spec]

    def _model_notices(self, notices: list[str]) -> None:
        """The reranker's own lines (precision fallback, smaller batches after running out of memory)."""
        if self.scorer is not None:
            notices.extend(n for n in getattr(self.scorer.reranker, "notices", []) if n not in notices)

    def pair_scorer(self, spec, mode: str, symmetric: bool, notices: list[str]) -> PairScorer:
        model = self.reranker(spec)
        if self.scorer is None or self.scorer.reranker is not model or (self.scorer.mode, self.scorer.symmetric) \
                != (mode, symmetric):
            self.scorer = PairScorer(model, self._score_cache(notices), self.frames, mode, symmetric)
        return self.scorer

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
    def compare(self, a: str | Path, b: str | Path, concepts: Sequence[str] | Sequence[Concept], reranker,
                mode: str = "expected", symmetric: bool = False) -> CompareResult:
        """Per-concept LMM similarity (1-5) of one pair of clips, and their Eq. 2 combination."""
        concepts = _as_concepts(concepts)
        pair = tuple(ClipRef(str(p), content_hash(p)) for p in (check_file(a, "video"), check_file(b, "video")))
        notices: list[str] = []
        scorer = self.pair_scorer(reranker, mode, symmetric, notices)
        answers = {c.key: scorer.score([pair], c)[0] for c in concepts}
        self._model_notices(notices)
        return CompareResult.answered(str(a), str(b), scorer.reranker.model_id, mode, symmetric, concepts, answers,
                                      scorer.model_pairs, tuple(notices))

    def _vector_index(self, catalog: Catalog, model_id: str) -> VectorIndex:
        """The saved FAISS index if it matches the catalog, else one built from the catalog now."""
        saved = VectorIndex.load(index_path(self.index_dir, model_id))
        if saved is not None and saved.generation == catalog.generation:
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
            summary["root"] = catalog.setting("root")
            summary["protocol"] = catalog.setting(PROTOCOL) or "fast"
        summary["index_dir"] = str(self.index_dir)
        return summary

    def open_catalog(self) -> Catalog:
        """The catalog, read-only; while an index run holds it, the run's last published snapshot."""
        if not self.has_index:
            raise NoIndexError(f"no index at {self.index_dir}: run `convis index FOLDER` first")
        try:
            return Catalog(self.catalog_path, read_only=True)
        except CatalogEmpty:
            raise NoIndexError(f"nothing is indexed in {self.index_dir} yet: run `convis index FOLDER`") from None
        except CatalogBusy:
            snapshot = self.index_dir / SNAPSHOT_NAME
            if not snapshot.is_file():
                raise CatalogBusy(f"an index run is writing {self.index_dir} and has not published a snapshot "
                                  "yet; retry in a minute") from None
            stamp = time.strftime("%H:%M:%S", time.localtime(snapshot.stat().st_mtime))
            self.notices.append(f"an index run is in progress; results reflect its state at {stamp}")
            return Catalog(snapshot, read_only=True)


def _as_concepts(concepts) -> list[Concept]:
    if concepts and all(isinstance(c, Concept) for c in concepts):
        return list(concepts)
    return parse_concepts(list(concepts))

