"""The Python API: ``Engine(index_dir).index(folder)`` and ``.query(anchor, concepts)``.

The CLI is a thin layer over this class.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import duckdb
import numpy as np

from indexers.base import Indexer
from indexers.factory import create_indexer
from retrieval.core.concepts import Concept, combine, parse_concepts
from retrieval.core.errors import one_line
from retrieval.core.sampling import FrameSpec
from retrieval.media.frames import Span, VideoDecoder
from retrieval.media.scan import content_hash
from retrieval.pipeline.distribute import Distributor, ProcessDistributor
from retrieval.pipeline.indexing import (
    DECODER_MODULES,
    PROTOCOL,
    PUBLISH_EVERY,
    SNAPSHOT_NAME,
    IndexReport,
    IndexRun,
    Progress,
    build_index,
    configure_faiss,
    settle_protocol,
)
from retrieval.search import ranking, signals
from retrieval.search.fusion import FusionModel
from retrieval.search.fusion_query import fuse, load_fusion
from retrieval.search.rerank import ClipRef, FrameCache, PairScorer, ScoreCache, default_score_cache
from retrieval.store.catalog import Catalog, CatalogBusy, CatalogEmpty, UnitRow
from retrieval.store.vectors import VectorIndex, index_path

INDEX_DIRNAME = ".convis"
CATALOG_NAME = "catalog.duckdb"


class AnchorError(ValueError):
    """The anchor video is missing, unreadable or not a video."""


class NoIndexError(FileNotFoundError):
    """No index where one was expected."""


@dataclass
class QueryResult:
    anchor: str
    concepts: list[Concept]
    signals: dict[str, str]  # concept key -> indexer model id used for recall scores
    hits: list[ranking.Hit]
    notices: list[str] = field(default_factory=list)
    reranker: str | None = None
    fusion: str | None = None

    def as_dict(self) -> dict:
        return {
            "anchor": self.anchor,
            "concepts": [{"key": c.key, "words": c.words, "weight": round(c.weight, 6)} for c in self.concepts],
            "signals": self.signals,
            "reranker": self.reranker,
            "fusion": self.fusion,
            "notices": self.notices,
            "hits": [h.as_dict() for h in self.hits],
        }


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
    def index(self, folder: str | Path, indexers: Sequence[str] = (), segment_seconds: float | None = None,
              captions: str | Path | None = None, workers: int | None = None, timeout: float = 300.0,
              distributor: Distributor | None = None, progress: Progress | None = None,
              frames: int | None = None, publish_every: float = PUBLISH_EVERY, ray: str | None = None,
              faiss_index: str | None = None, faiss_params: str | None = None,
              protocol: str | None = None) -> IndexReport:
        """Index ``folder``; ``frames`` overrides how many frames image models sample per unit
        (video models keep the clip length they were trained on); ``faiss_index``/``faiss_params``
        fix the FAISS factory string and search parameters (kept for later runs; "auto" resets);
        ``protocol`` ("fast" or "paper", kept in the catalog) says how the indexers see videos."""
        if self.index_dir is None:
            raise NoIndexError("indexing needs an index folder")
        folder = Path(folder).resolve()
        if not folder.is_dir():
            raise NotADirectoryError(f"not a folder: {folder}")
        self.index_dir.mkdir(parents=True, exist_ok=True)
        own = distributor is None and ray is None
        if own:
            distributor = ProcessDistributor(workers or max(1, (os.cpu_count() or 2) // 2), timeout)
            distributor.start(DECODER_MODULES)  # workers start while the models load
        try:
            return self._index(folder, indexers, segment_seconds, captions, timeout, distributor, progress, frames,
                               publish_every, ray, faiss_index, faiss_params, protocol)
        finally:
            if own:
                distributor.close()

    def _index(self, folder, indexers, segment_seconds, captions, timeout, distributor, progress, frames,
               publish_every, ray, faiss_index, faiss_params, protocol) -> IndexReport:
        with Catalog(self.catalog_path) as catalog:
            catalog.set_setting("root", str(folder))
            self.protocol = settle_protocol(catalog, protocol)
            specs = list(indexers) or [f"{r.name}:{r.source}" for r in catalog.indexers()] or [self._default_spec()]
            models = [self.indexer(s) for s in specs]
            if frames:
                for model in models:
                    if model.kind == "image" and model.frame_spec.rule != "every":  # every frame stays every frame
                        model.frames_per_unit = frames
            if captions is not None and not any(m.kind == "text" for m in models):
                models.append(self.indexer("text"))  # captions are only useful with a text indexer
            configure_faiss(catalog, models, faiss_index, faiss_params)
            if ray is not None:  # decode and embed on a Ray cluster, merge here exactly as a local run
                from retrieval.pipeline.ray_pipeline import index_with_ray

                return index_with_ray(catalog, self.index_dir, models, folder, address=ray,
                                      segment_seconds=segment_seconds, captions=captions, progress=progress,
                                      publish_every=publish_every, device=self.device,
                                      trust_remote_code=self.trust_remote_code, timeout=timeout)
            run = IndexRun(catalog, self.index_dir, models, distributor,
                           segment_seconds, Path(captions) if captions else None, progress, publish_every)
            from indexers.vision import cpu_threads  # torch: imported only by commands that embed

            with cpu_threads(models, cores_left(distributor)):
                return run.run(folder)

    def _default_spec(self) -> str:
        from indexers.auto import default_indexer

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
        anchor_path = _check_anchor(anchor)
        with self.open_catalog() as catalog:
            indexed = {r.name: r.indexer for r in catalog.indexers()}
            self.protocol = catalog.setting(PROTOCOL) or "fast"  # anchors are embedded as the index was
            signal_of = {c.key: signals.choose(c.key, indexed, signal_overrides) for c in concepts}
            digest = content_hash(anchor_path)
            vectors, notices = self._anchor_vectors(catalog, anchor_path, digest, start, end, signal_of, indexed)
            indices = {m: self._vector_index(catalog, m) for m in set(signal_of.values())}
            recall_k = recall_k or max(100, 10 * k)
            candidates = sorted(ranking.recall(vectors, indices, recall_k))
            units = catalog.units(candidates)
            if fusion is not None:
                every = self._every_anchor_vector(catalog, anchor_path, digest, start, end, indexed, vectors)
                indices.update({m: indices.get(m) or self._vector_index(catalog, m) for m in every})
        span = Span(0, start or 0.0, end if end is not None else float("inf"))
        keep = lambda unit: not _same_clip(unit, digest, span)  # noqa: E731 (never return the anchor itself)
        hits = ranking.rank(ranking.score(candidates, vectors, indices, signal_of), units, concepts, keep)
        result = QueryResult(str(anchor), concepts, signal_of, hits[:k], [*self.notices, *notices])
        shortlist = hits[:max(k, rerank_top)] if fusion is not None else hits[:k]
        if reranker is not None:
            anchor_clip = ClipRef(str(anchor_path), digest, start or 0.0, end)
            shortlist = self._rerank(anchor_clip, hits[:rerank_top], concepts, reranker, mode, symmetric, notices)
            result.reranker = self.scorer.reranker.model_id
        if fusion is not None:
            model = load_fusion(fusion)
            reranker_name = self.scorer.reranker.name if reranker is not None else None
            shortlist = fuse(shortlist, concepts, model, ranking.similarities(
                [h.unit_id for h in shortlist], every, indices), reranker_name, result.notices)
            result.fusion = str(fusion) if not isinstance(fusion, FusionModel) else "model"
        result.hits = shortlist[:k]
        return result

    def _every_anchor_vector(self, catalog, path, digest, start, end, indexed, known) -> dict[str, np.ndarray]:
        """The anchor's vector from every indexed signal that can give one (fusion uses them all)."""
        stored_path = next(iter(catalog.files_by_hash(digest)), None) if start is None and end is None else None
        vectors = dict(known)
        for model_id in indexed.values():
            if model_id in vectors:
                continue
            vec = _stored_vector(catalog, stored_path, model_id)
            if vec is None and self.indexer(model_id).kind != "text":  # a new anchor has no caption
                model = self.indexer(model_id)
                vec = model.embed_units([_decode_anchor(path, model.frame_spec, start, end)])[0]
            if vec is not None:
                vectors[model_id] = vec
        return vectors

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

    def _rerank(self, anchor: ClipRef, hits, concepts, spec, mode, symmetric, notices):
        scorer = self.pair_scorer(spec, mode, symmetric, notices)
        root = self.root
        clips = [ClipRef(str(root / h.path), h.content_hash, h.start, h.end) for h in hits]
        per_concept = {c.key: scorer.score([(anchor, clip) for clip in clips], c) for c in concepts}
        for i, hit in enumerate(hits):
            hit.recall_scores = dict(hit.scores)
            hit.scores = {c.key: per_concept[c.key][i].score for c in concepts}
            hit.seen = {c.key: per_concept[c.key][i].evidence for c in concepts if per_concept[c.key][i].evidence}
            hit.total = None if None in hit.scores.values() else combine(hit.scores, concepts)
        self._model_notices(notices)
        return ranking.order(hits)

    # -- compare ------------------------------------------------------------
    def compare(self, a: str | Path, b: str | Path, concepts: Sequence[str] | Sequence[Concept], reranker,
                mode: str = "expected", symmetric: bool = False) -> dict:
        """Per-concept LMM similarity (1-5) of one pair of clips, and their Eq. 2 combination."""
        concepts = _as_concepts(concepts)
        clips = [ClipRef(str(p), content_hash(p)) for p in (_check_anchor(a, "video"), _check_anchor(b, "video"))]
        notices: list[str] = []
        scorer = self.pair_scorer(reranker, mode, symmetric, notices)
        scores = {c.key: scorer.score([tuple(clips)], c)[0] for c in concepts}
        self._model_notices(notices)
        values = {k: v.score for k, v in scores.items()}
        total = None if None in values.values() else combine(values, concepts)
        return {
            "a": str(a), "b": str(b), "reranker": scorer.reranker.model_id, "mode": mode, "symmetric": symmetric,
            "concepts": [{"key": c.key, "words": c.words, "weight": round(c.weight, 6),
                          "score": values[c.key], "raw": scores[c.key].raw,
                          "probs": scores[c.key].probs, "seen": scores[c.key].evidence} for c in concepts],
            "total": total, "model_pairs": scorer.model_pairs, "notices": notices,
        }

    def _anchor_vectors(self, catalog, path, digest, start, end, signal_of, indexed):
        """The anchor's vector per needed signal: stored when the anchor is indexed, else embedded now."""
        notices, vectors = [], {}
        stored_path = next(iter(catalog.files_by_hash(digest)), None) if start is None and end is None else None
        for concept, model_id in list(signal_of.items()):
            vec = _stored_vector(catalog, stored_path, model_id)
            if vec is None:
                vec, model_id = self._embed_anchor(path, start, end, model_id, indexed, notices, concept)
                signal_of[concept] = model_id
            vectors[model_id] = vec
        return vectors, notices

    def _embed_anchor(self, path, start, end, model_id, indexed, notices, concept):
        model = self.indexer(model_id)
        if model.kind == "text":
            # a new anchor has no caption: fall back to the best visual signal for this concept
            visual = {n: m for n, m in indexed.items() if self.indexer(m).kind != "text"}
            replacement = signals.choose(concept, visual)
            notices.append(f"{concept}: the anchor has no caption, scored with {replacement} instead of {model_id}")
            model_id, model = replacement, self.indexer(replacement)
        frames = _decode_anchor(path, model.frame_spec, start, end)
        return model.embed_units([frames])[0], model_id

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


def cores_left(distributor: Distributor) -> int | None:
    """Cores the models may use beside local decode workers (None: not local, leave torch's choice)."""
    if not isinstance(distributor, ProcessDistributor):
        return None
    return max(1, (os.cpu_count() or 1) - distributor.workers)


def _as_concepts(concepts) -> list[Concept]:
    if concepts and all(isinstance(c, Concept) for c in concepts):
        return list(concepts)
    return parse_concepts(list(concepts))


def _check_anchor(anchor: str | Path, what: str = "anchor") -> Path:
    path = Path(anchor).expanduser()
    if not path.exists():
        raise AnchorError(f"{what} not found: {anchor}")
    if not path.is_file():
        raise AnchorError(f"{what} is not a file: {anchor}")
    if not os.access(path, os.R_OK):
        raise AnchorError(f"{what} is not readable: {anchor}")
    return path


def _decode_anchor(path: Path, frames: FrameSpec, start: float | None, end: float | None) -> np.ndarray:
    from retrieval.media.frames import DecodeError

    decoder = VideoDecoder()
    try:
        if start is None and end is None:
            _, units = decoder.sample(path, frames)
            return units[0][1].pixels
        return decoder.sample_span(path, frames, start or 0.0, end).pixels
    except DecodeError as exc:
        raise AnchorError(f"anchor {path} is not a readable video: {exc}") from None


def _stored_vector(catalog: Catalog, path: str | None, model_id: str) -> np.ndarray | None:
    if path is None:
        return None
    vectors = catalog.unit_vectors(path, model_id)
    return vectors[0] if len(vectors) == 1 else None  # a segmented file is no single anchor


def _same_clip(unit: UnitRow, digest: str, span: Span) -> bool:
    return unit.content_hash == digest and unit.start < span.end and unit.end > span.start
