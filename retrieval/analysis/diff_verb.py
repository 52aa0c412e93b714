"""The diff verb: what differs between two clips, or candidates ranked by how much each differs from one.

The asking itself (statements, proposals, the score cache) is ``retrieval.analysis.diff``'s; this module picks
the clips, names them as results do (relative to the index root when there is an index), and gathers the
notices of one request.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from rerankers.prompts.diff import DiffInputError
from retrieval.analysis.diff import DiffRanking, rank_by_difference
from retrieval.lmm.clips import ClipRef
from retrieval.lmm.differences import DiffResult, diff_pair
from retrieval.media.scan import content_hash
from retrieval.model_cache import ModelCache, model_notices
from retrieval.pipeline.progress import Progress
from retrieval.search.anchor import check_file
from retrieval.search.requests import DiffRequest
from retrieval.search.results import shown_path
from retrieval.store.index_dir import has_index, index_root


def run_diff(request: DiffRequest, index_dir: Path | None, models: ModelCache,
             progress: Progress | None = None) -> DiffResult | DiffRanking:
    """The pair's differences (a DiffResult), or the candidates ranked (a DiffRanking; ``progress("candidate",
    {done, total})`` after each candidate)."""
    if request.ranks:
        return _rank(request, index_dir, models, progress)
    return _pair(request, index_dir, models)


def _pair(request: DiffRequest, index_dir: Path | None, models: ModelCache) -> DiffResult:
    a, b = request.a, request.b
    notices: list[str] = []
    first, second = _clip(a, request.a_span, request.a_frames), _clip(b, request.b_span, request.b_frames)
    if first.key == second.key:
        raise DiffInputError(f"{Path(a).name} and {Path(b).name} are the same video (same content and span): "
                             "there is nothing to tell apart")
    scorer = models.diff_scorer(request.reranker, request.mode, request.symmetric, request.fps, notices)
    result = diff_pair(scorer, first, second, _shown(index_dir, a, b), request.action, request.statements,
                       request.most)
    model_notices(notices, scorer.reranker)
    return replace(result, notices=tuple(notices))


def _rank(request: DiffRequest, index_dir: Path | None, models: ModelCache, progress: Progress | None
          ) -> DiffRanking:
    """The candidates ranked by how much each differs from the reference (most different first): the sum over
    the statements (given, or each candidate's own proposed ones) of how surely the LMM tells the two apart.
    A candidate with the reference's content is not asked and ranks last, with a notice."""
    reference, candidates = request.a, request.candidates
    notices: list[str] = []
    ref = _clip(reference, (0.0, None))
    scorer = models.diff_scorer(request.reranker, request.mode, request.symmetric, request.fps, notices)
    results = []
    for done, path in enumerate(candidates):
        clip = _clip(path, (0.0, None))
        shown = _shown(index_dir, reference, path)
        if clip.key == ref.key:
            notices.append(f"{shown[1]} is the same video as the reference: not asked, ranked last")
            results.append((shown[1], clip.path, None))
        else:
            asked = diff_pair(scorer, ref, clip, shown, request.action, request.statements, request.most)
            results.append((shown[1], clip.path, asked))
        if progress is not None:
            progress("candidate", {"done": done + 1, "total": len(candidates)})
    model_notices(notices, scorer.reranker)
    return DiffRanking(_shown(index_dir, reference)[0], request.action, tuple(rank_by_difference(results)),
                       scorer.model_calls, tuple(notices), scorer.cached)


def _clip(path: str | Path, span: tuple[float, float | None], frames: tuple[int, int] | None = None) -> ClipRef:
    checked = check_file(path, "video")
    return ClipRef(str(checked), content_hash(checked), float(span[0] or 0.0), span[1],
                   None if frames is None else (int(frames[0]), int(frames[1])))


def _shown(index_dir: Path | None, *paths) -> tuple[str, ...]:
    root = str(index_root(index_dir)) if has_index(index_dir) else None
    return tuple(shown_path(p, root) for p in paths)
