"""A comparison: how similar two clips are, per concept, on the 0-1 scale of a query's scores.

With a reranker the LMM is asked about the two whole files; without one, the index's signals score the pair
exactly as a query for ``a`` scores ``b`` (which must be indexed), so the numbers match the query's, and ``b``'s
rank is its place among the query's candidates: every indexed unit, or those the request's ``where`` keeps.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from retrieval.lmm.clips import ClipRef
from retrieval.media.scan import content_hash
from retrieval.model_cache import ModelCache, model_notices
from retrieval.search import signals
from retrieval.search.anchor import check_file
from retrieval.search.query import run_query
from retrieval.search.requests import CompareRequest, QueryRequest
from retrieval.search.results import Answerer, CompareResult, shown_path
from retrieval.store.index_dir import has_index, index_root, open_catalog


def run_compare(request: CompareRequest, index_dir: Path | None, models: ModelCache) -> CompareResult:
    """``request`` answered by its reranker, else by the signals of the index in ``index_dir``."""
    if request.reranker is None:
        return _by_signals(request, index_dir, models)
    return _by_reranker(request, index_dir, models)


def _by_reranker(request: CompareRequest, index_dir: Path | None, models: ModelCache) -> CompareResult:
    a, b = request.a, request.b
    pair = tuple(ClipRef(str(p), content_hash(p)) for p in (check_file(a, "video"), check_file(b, "video")))
    notices: list[str] = []
    scorer = models.pair_scorer(request.reranker, request.mode, request.symmetric, notices)
    concepts = list(request.concepts)
    answers = {c.key: scorer.score([pair], c)[0] for c in concepts}
    model_notices(notices, scorer.reranker)
    root = str(index_root(index_dir)) if has_index(index_dir) else None
    by = Answerer(scorer.reranker.model_id, request.mode, request.symmetric)
    return CompareResult.answered(shown_path(a, root), shown_path(b, root), by, concepts, answers, scorer.model_pairs,
                                  tuple(notices), root)


def _by_signals(request: CompareRequest, index_dir: Path | None, models: ModelCache) -> CompareResult:
    b = request.b
    wanted = content_hash(check_file(b, "video"))
    catalog, _ = open_catalog(index_dir)
    with catalog:
        units = catalog.summary()["units"]
        if not catalog.files_by_hash(wanted):
            raise signals.SignalError(f"{Path(b).name} is not in the index at {index_dir}, so its "
                                      "signals cannot score it: index it, or ask an LMM (--reranker)")
    # every unit recalled, so b's rank too; a pair signal (an LMM per pair) is asked about b's units alone
    overrides = request.signal_overrides
    asks_model = bool(signals.split_pair_signals(overrides or {})[1])
    query = QueryRequest(request.a, request.concepts, k=units, start=request.a_span[0], end=request.a_span[1],
                         signal_overrides=overrides, recall_k=units, rerank_top=units, where=request.where)
    result = run_query(query, index_dir, models, only=wanted if asks_model else None, short_reasons=False)
    hit = next((h for h in result.hits if h.content_hash == wanted and
                (request.b_start is None or abs(h.start - request.b_start) < 1e-3)), None)  # best first: b's best
    if hit is None and request.where:
        raise signals.SignalError(f"{Path(b).name} is not among the units {' and '.join(map(repr, request.where))} "
                                  "keeps, so it has no rank among them")
    if hit is None:
        raise signals.SignalError(f"{Path(b).name} is not an indexed clip other than the anchor")
    meanings = tuple(signals.meaning_notices(list(request.concepts), result.signals, result.beside))
    result = replace(result, notices=[*result.notices, *meanings])
    compared = CompareResult.from_query(result.anchor, shown_path(b, result.root), result, hit)
    return replace(compared, rank=None) if asks_model else compared  # ranked among b's units only

