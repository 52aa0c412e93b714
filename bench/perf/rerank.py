"""Reranking cost: scoring pairs cold (decode, model, store), then again from the score cache alone."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Sequence

from bench.perf.config import Footage, PerfConfig, Progress
from bench.perf.measuring import repeated
from bench.perf.sections.rerank import RerankResult
from bench.tiny.vlm import build_qwen_vl
from rerankers.factory import create_reranker
from retrieval.core.concepts import parse_concepts
from retrieval.lmm.clips import ClipRef, FrameCache
from retrieval.lmm.similarity import PairScorer
from retrieval.media.scan import content_hash
from retrieval.store.caches.scores import ScoreCache


def tiny_reranker(folder: Path) -> str:
    """A tiny random Qwen2-VL checkpoint (bench/tiny/vlm.py): exercises the real code path on a CPU."""
    return str(build_qwen_vl(Path(folder) / "qwen2-vl-tiny"))


def measure_rerank(clips: Sequence[Path], reranker_spec: str, concept: str = "location") -> RerankResult:
    """Score (first clip, each other clip) cold, then again as a new command with only the cache shared."""
    started = time.perf_counter()
    model = create_reranker(reranker_spec)
    load_s = time.perf_counter() - started
    refs = [ClipRef(str(c), content_hash(c)) for c in clips]
    pairs = [(refs[0], other) for other in refs[1:]]
    wanted = parse_concepts([concept])[0]
    with tempfile.TemporaryDirectory(prefix="convis-perf-") as tmp:
        first, first_s = _score_once(model, Path(tmp) / "scores.duckdb", pairs, wanted)
        repeat, repeat_s = _score_once(model, Path(tmp) / "scores.duckdb", pairs, wanted)
    return RerankResult(model.model_id, len(pairs), first_s, first.frames.decodes, repeat_s,
                        repeat.model_pairs, repeat.frames.decodes, load_s)


def _score_once(model, cache_path: Path, pairs, concept):
    started = time.perf_counter()
    cache = ScoreCache(cache_path)  # opened per command, as the engine does
    try:
        scorer = PairScorer(model, cache, FrameCache())
        scorer.score(pairs, concept)
        return scorer, time.perf_counter() - started
    finally:
        cache.close()


def run_rerank(config: PerfConfig, footage: Footage, progress: Progress) -> list[RerankResult]:
    """The first clip against the next eight (one in smoke runs), with the torch thread setting listed last."""
    spec = config.reranker or tiny_reranker(footage.scratch)
    chosen = footage.clips[: 2 if config.smoke else 9]
    progress(f"rerank: {len(chosen) - 1} pairs with {spec}")
    return [repeated(config, measure_rerank, chosen, spec, threads=config.torch_threads[-1])]
