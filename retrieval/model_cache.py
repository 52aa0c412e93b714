"""The models and caches an engine keeps between requests: built once, shared by every request.

Indexers (by spec and the index's protocol), their text towers (ONNX Runtime once exported), rerankers (by
spec), the scorers that ask a reranker (by their settings), the persistent score cache, each index's anchor
cache and the decoded frames.  Each model is built behind a lock of its own, so requests answered at the same time
build it once, and a build holds up only the requests waiting for that same model (a text search is not held up by
an indexer being built); what a request learns along the way (a fallback, a cache that cannot open) goes to the
``notices`` it passes in, never to state kept here.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Hashable, TypeVar

import duckdb
import numpy as np

from indexers import text_towers
from indexers.factory import create_indexer  # the registry; a family's module loads when built
from retrieval.core.errors import ConvisError, one_line
from retrieval.lmm.clips import FrameCache
from retrieval.lmm.similarity import PairScorer
from retrieval.store.caches.anchor import ANCHORS_NAME, AnchorCache, AnchorKey
from retrieval.store.caches.scores import ScoreCache, default_score_cache
from retrieval.store.index_dir import has_index

if TYPE_CHECKING:
    from indexers.base import Indexer
    from retrieval.core.sampling import FrameSpec
    from retrieval.lmm.differences import DiffScorer
    from retrieval.lmm.vqascore import VqaScorer


T = TypeVar("T")


def model_notices(notices: list[str], model) -> None:
    """A reranker's own lines (precision fallback, smaller batches after running out of memory), once each."""
    notices.extend(n for n in getattr(model, "notices", []) if n not in notices)


# who generates captions: transformers (its dynamic KV cache, or "hf-static": its static cache and compiled decode
# step), or the vLLM serving engine
CAPTIONER_BACKENDS = ("hf", "hf-static", "vllm")


class CaptionerBackendError(ConvisError, ValueError):
    """A captioner backend that does not exist, or cannot caption as asked."""

    exit_code, http_status = 2, 400


class ModelCache:
    def __init__(self, device: str | None = None, trust_remote_code: bool = False, rerank_batch: int | None = None,
                 index_dir: Path | None = None, share: bool = True, captioner_backend: str = "hf"):
        self.device = device
        self.share = share  # fast-protocol rerankers share an anchor's work over its pairs (the paper's never do)
        self.captioner_backend = captioner_backend  # who generates captions: "hf", "hf-static" or "vllm"
        self.trust_remote_code = trust_remote_code
        self.rerank_batch = rerank_batch  # pairs per LMM forward pass (None: the family's default)
        self.index_dir = index_dir  # the score cache lives beside its index (none: in the user cache)
        self.frames = FrameCache()  # each clip decoded once
        self._lock = threading.Lock()  # held only to look up or add an entry, never while building one
        self._building: dict[tuple[str, Hashable], threading.Lock] = {}  # one lock per entry being built
        self._scores_lock = threading.Lock()
        self._indexers: dict[tuple[str, str], Indexer] = {}
        self._towers: dict[tuple[str, str], object] = {}  # (spec, protocol) -> what embeds its sentences
        self._built_frames: dict[tuple[str, str], FrameSpec] = {}  # each indexer's frames as it was built
        self._anchors: dict[Path, AnchorCache] = {}  # by index folder
        self._rerankers: dict = {}  # (spec, protocol) -> Reranker
        self._captioners: dict = {}  # (spec, protocol) -> a captioner on another backend than the reranker's
        self._pairs: dict[tuple[int, str, bool], PairScorer] = {}
        self._vqa: dict[int, VqaScorer] = {}  # reranker object id -> its VQAScore scorer
        self._scores: ScoreCache | None = None

    def indexer(self, spec: str, protocol: str = "fast") -> Indexer:
        """The indexer for ``spec``, built once, as an index of that ``protocol`` builds it."""
        def build() -> Indexer:
            extra = {"trust_remote_code": True} if self.trust_remote_code else {}
            indexer = create_indexer(spec, protocol=protocol, device=self.device, **extra)
            self._built_frames[(spec, protocol)] = indexer.frame_spec  # before the indexer is seen (_resampled)
            return indexer

        return self._once("indexers", self._indexers, (spec, protocol), build)

    def _once(self, kind: str, table: dict, key: Hashable, build: Callable[[], T]) -> T:
        """``table[key]``, made by ``build()`` the first time it is asked, once even when asked at once."""
        found = table.get(key)
        if found is not None:
            return found
        with self._lock:
            building = self._building.setdefault((kind, key), threading.Lock())
        with building:
            if key not in table:
                table[key] = build()
            return table[key]

    def text_tower(self, spec: str, protocol: str = "fast", notices: list[str] | None = None):
        """What embeds sentences for the indexer ``spec`` (``embed_texts``, ``model_id``, ``kind``): its ONNX
        export when one is ready for these weights, with no torch loaded; else the indexer itself, exported on
        the way so that the next process needs no torch.  Why torch still answers goes to ``notices``."""
        def build():
            folder = text_towers.locate(spec, protocol)
            tower = text_towers.load(folder)
            if tower is None:
                tower = self._exported(self.indexer(spec, protocol), folder, [] if notices is None else notices)
            return tower

        return self._once("towers", self._towers, (spec, protocol), build)

    def text_towers(self) -> list:
        """Every text tower handed out so far (an ONNX one, or the indexer answering in torch)."""
        return list(self._towers.values())

    def export_text_towers(self, notices: list[str]) -> None:
        """Export the text tower of every indexer built so far that has one and has none exported for its
        weights: indexing already paid for torch, so the queries after it need none."""
        for (_, protocol), indexer in list(self._indexers.items()):
            folder = text_towers.locate(indexer.model_id, protocol)
            if folder is not None and text_towers.TowerManifest.read(folder) is None:
                self._exported(indexer, folder, notices)

    def _exported(self, indexer: Indexer, folder: Path | None, notices: list[str]):
        """``indexer``'s ONNX tower, exported now; the indexer itself when it cannot be, with the reason."""
        from indexers.text_export import export

        name = indexer.model_id
        refused = text_towers.refused(folder)
        if refused is None:
            try:
                tower, refused = export(indexer)
            except Exception as exc:  # an op the exporter lacks, a full disk: torch keeps answering
                notices.append(f"{name}: sentences are embedded with torch (its ONNX export failed: "
                               f"{one_line(exc, 160)})")
                return indexer
            if tower is not None:
                return tower
        if refused is not None:
            notices.append(f"{name}: sentences are embedded with torch (its ONNX export differs from it: "
                           f"cosine {refused.cosine:.6f} < {text_towers.MIN_COSINE})")
        return indexer

    def indexers(self) -> list[tuple[str, str]]:
        """The (spec, protocol) of every indexer built so far."""
        return list(self._indexers)

    def anchor_vector(self, index_dir: Path, key: AnchorKey, embed: Callable[[], np.ndarray],
                      notices: list[str]) -> np.ndarray:
        """The anchor vector ``key`` names: from the anchor cache beside ``index_dir`` when it holds it (then no
        model is built), else ``embed()``, kept there for the next request."""
        if self._resampled(key.model_id, key.protocol):
            return embed()  # an index run's --frames resampled the built model: not what the key names
        with self._lock:
            if index_dir not in self._anchors:
                self._anchors[index_dir] = AnchorCache(index_dir / ANCHORS_NAME)
            cache = self._anchors[index_dir]
        vector = cache.get(key, notices)
        if vector is None:
            vector = embed()
            cache.put(key, vector, notices)
        return vector

    def _resampled(self, spec: str, protocol: str) -> bool:
        model = self._indexers.get((spec, protocol))
        return model is not None and model.frame_spec != self._built_frames[(spec, protocol)]

    def reranker(self, spec, protocol: str = "fast"):
        """A Reranker built once per spec and protocol, shared by everything that asks it (specs are names, hub ids
        or folders; a Reranker is itself): under "paper" in its family's paper precision, one request a forward
        pass, and refused where the paper cannot be run (``rerankers.factory.create_for_protocol``)."""
        from rerankers.base import Reranker
        from rerankers.factory import create_for_protocol

        if isinstance(spec, Reranker):
            return spec
        return self._once("rerankers", self._rerankers, (spec, protocol),
                          lambda: create_for_protocol(spec, protocol, self.device, batch_size=self.rerank_batch,
                                                              share=self.share))

    def captioner(self, spec, protocol: str = "fast"):
        """Who captions with ``spec`` under the index's ``protocol`` (``Reranker.captioner``): the reranker itself
        for "fast", the reference's caption rule around the paper protocol's build of it for "paper"; on the "vllm"
        backend, the family's prompts and frames with vLLM generating (``rerankers.vllm_captioner``)."""
        if self.captioner_backend == "vllm" and isinstance(spec, str):
            from rerankers.vllm_captioner import vllm_captioner

            return self._once("captioners", self._captioners, (spec, protocol),
                              lambda: vllm_captioner(spec, protocol))
        model = self.reranker(spec, protocol)
        if self.captioner_backend == "hf-static":
            model.static_cache = True  # read by rerankers.bulk's captions only; scoring never generates past a token
        return model.captioner(protocol)

    def check_captioner_backend(self, ray_address: str | None = None) -> None:
        """Refuse at once (one line) a captioner backend this machine cannot run, before any work."""
        if self.captioner_backend not in CAPTIONER_BACKENDS:
            raise CaptionerBackendError(f"unknown captioner backend {self.captioner_backend!r}; use "
                                        f"{' or '.join(CAPTIONER_BACKENDS)}")
        if ray_address and self.captioner_backend == "vllm":
            raise CaptionerBackendError(f"--captioner-backend {self.captioner_backend} captions in this process; "
                                        "on Ray the actors caption with hf")
        if self.captioner_backend == "vllm":
            from rerankers.vllm_captioner import require_vllm

            require_vllm()

    def check_lmms(self, specs) -> None:
        """Refuse at once (RerankerUnavailable, one line) a video LMM whose weights cannot be had, before a request
        decodes, embeds or imports anything heavy; one built already, or a Reranker given as itself, passes."""
        from rerankers.factory import check_weights

        built = {spec for spec, _ in self._rerankers}
        for spec in specs:
            if isinstance(spec, str) and spec not in built:
                check_weights(spec)

    def rerankers(self) -> list:
        """Every reranker built so far."""
        return list(self._rerankers.values())

    def pair_scorer(self, spec, mode: str = "expected", symmetric: bool = False,
                    notices: list[str] | None = None) -> PairScorer:
        """Similarity of pairs asked of ``spec`` as ``mode`` and ``symmetric`` say, one scorer for each (its
        ``model_pairs`` counts the pairs it sent to the model)."""
        model = self.reranker(spec)
        return self._once("pairs", self._pairs, (id(model), mode, symmetric),
                          lambda: PairScorer(model, self.score_cache([] if notices is None else notices), self.frames,
                                             mode, symmetric))

    def vqa_scorer(self, spec, notices: list[str] | None = None) -> VqaScorer:
        """VQAScore with the LMM ``spec`` (or a Reranker), built once, sharing the score cache and decoded frames
        (its ``questions_asked`` counts the model calls)."""
        from retrieval.lmm.vqascore import VqaScorer

        model = self.reranker(spec)
        return self._once("vqa", self._vqa, id(model),
                          lambda: VqaScorer(model, self.score_cache([] if notices is None else notices), self.frames))

    def diff_scorer(self, spec, mode: str = "expected", symmetric: bool = False, fps: float | None = None,
                    notices: list[str] | None = None) -> DiffScorer:
        """Which-video questions and open lists of differences, asked of ``spec`` through the score cache and
        decoded frames; ``fps``: frames at that fixed rate instead of the family's rule.  A new one each time:
        its ``model_calls`` count one request's."""
        from retrieval.lmm.differences import DiffScorer

        return DiffScorer(self.reranker(spec), self.score_cache([] if notices is None else notices), self.frames,
                          mode, symmetric, fps)

    def score_cache(self, notices: list[str]) -> ScoreCache | None:
        """The persistent score cache, opened once; None (with a notice) when it cannot be."""
        with self._scores_lock:
            if self._scores is None:
                path = default_score_cache(self.index_dir if has_index(self.index_dir) else None)
                try:
                    self._scores = ScoreCache(path)
                except (duckdb.IOException, OSError) as exc:
                    notices.append(f"score cache {path} unavailable ({one_line(exc, 120)}); not caching")
                    return None
            return self._scores
