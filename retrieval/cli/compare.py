"""``convis compare`` (how alike two clips are, by concept) and ``convis diff`` (what differs, and in which)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, List, Optional

import typer

from retrieval.cli.console import counting
from retrieval.cli.options import (
    CANT_TELL_MARGIN,
    DEFAULT_DIFF_MODEL,
    INDEX_DIRNAME,
    MAX_SAMPLE_FPS,
    CompareIndexDirOpt,
    DeviceOpt,
    DiffIndexDirOpt,
    FilterOpt,
    FreeTextOpt,
    HtmlOpt,
    JsonOpt,
    PairConceptsOpt,
    PairModeOpt,
    PairSymmetricOpt,
    RerankBatchOpt,
    UserError,
    check_mode,
    check_page,
    concepts_to_score,
    resolve_index_dir,
)
from retrieval.cli.present.common import page_written
from retrieval.cli.present.comparison import print_comparison, show_diff
from retrieval.cli.present.pages import write_compare_html, write_diff_html, write_diff_ranking_html
from retrieval.cli.present.results import show

AArg = Annotated[Path, typer.Argument(metavar="A", help="First video.")]
BArg = Annotated[Path, typer.Argument(metavar="B", help="Second video.")]
PairRerankerOpt = Annotated[Optional[str], typer.Option(
    "--reranker", "-r", metavar="NAME", help="LMM to ask (qwen2.5-vl, llava-onevision, ..., a hub id or a folder). "
    "Without one, the index's signals score the pair, as a query for A scores B (B must be indexed).")]
PairSignalOpt = Annotated[List[str], typer.Option(metavar="CONCEPT=INDEXER", help="Override the indexer used for a "
                                                  "concept.")]


def compare(a: AArg, b: BArg, concept: PairConceptsOpt = None, free_text: FreeTextOpt = False,
            reranker: PairRerankerOpt = None, signal: PairSignalOpt = None, mode: PairModeOpt = "expected",
            symmetric: PairSymmetricOpt = False, rerank_batch: RerankBatchOpt = None,
            index_dir: CompareIndexDirOpt = None, filters: FilterOpt = None, device: DeviceOpt = None,
            html: HtmlOpt = None, as_json: JsonOpt = False):
    """How similar are A and B in terms of each concept, from 0 (different) to 1 (the same)? Scored by the
    index's signals, or by an LMM's 1-5 answer (shown as 0-1) with --reranker. With --where, B's rank is its
    place among the units the filter keeps (B must be one of them)."""
    from retrieval.api import CONVIS_CONCEPTS, CompareRequest, Engine, parse_overrides

    check_page(html)
    concepts = concepts_to_score(concept or list(CONVIS_CONCEPTS), mode, free_text)
    engine = Engine(_compare_index(index_dir, a, reranker), device=device, rerank_batch=rerank_batch)
    result = engine.compare(CompareRequest(a, b, concepts, reranker, mode, symmetric,
                                           signal_overrides=parse_overrides(signal or [], free_text),
                                           where=filters or ()))
    if html is not None:
        page_written("page", write_compare_html(result, a, b, html))
    show(result, as_json, print_comparison)


def _compare_index(index_dir: Optional[Path], a: Path, reranker: Optional[str]) -> Optional[Path]:
    """The index a comparison uses: its signals score the pair; an LMM only keeps its score cache there."""
    from retrieval.api import find_index_dir

    if index_dir is not None:
        return resolve_index_dir(index_dir, a)
    found = find_index_dir(a.parent, Path.cwd())
    if found is None and reranker is None:
        raise UserError(f"no {INDEX_DIRNAME} index near {a} to score the pair with its signals; pass --index-dir "
                        "DIR, or --reranker NAME to ask an LMM (e.g. -r qwen2.5-vl)")
    return found


VideosArg = Annotated[List[Path], typer.Argument(
    metavar="A B [MORE]", help="Two clips to tell apart (A is video a, B video b). More than two: A is the reference "
    "and the others are ranked by how much they differ from it.")]
ActionOpt = Annotated[str, typer.Option("--action", metavar="TEXT", help="What the clips show, e.g. 'barbell squat' "
                                        "(VidDiff's action description).")]
StatementOpt = Annotated[List[str], typer.Option(
    "--statement", "-s", metavar="TEXT", help="Closed mode: a difference ('wider stance'); the LMM says which clip "
    "it is more true of. Repeatable.")]
StatementsOpt = Annotated[Optional[Path], typer.Option(
    "--statements", metavar="FILE", help="Closed mode: statements from a file, one a line ('#' lines skipped), or "
    "JSON: a list, {key: text} or VidDiff's {key: {\"description\": text}}.")]
OpenOpt = Annotated[Optional[int], typer.Option(
    "--open", metavar="N", min=1, help="Open mode: the LMM proposes up to N differences, each with the clip it "
    "applies to; each is then asked in closed mode, so it carries a probability.")]
DiffRerankerOpt = Annotated[str, typer.Option("--reranker", "-r", metavar="NAME", help="The video LMM asked "
                                              "(qwen2.5-vl, llava-onevision, internvl, ..., a hub id or a weights "
                                              "folder).")]
DiffModeOpt = Annotated[str, typer.Option(metavar="expected|greedy", help="expected: P(a) / (P(a) + P(b)) at the "
                                          "answer's first token; greedy: the letter the model writes (unreadable "
                                          f"if neither). The table says can't tell when P(a) is within "
                                          f"{CANT_TELL_MARGIN:g} of 0.5; --json's VidDiff predictions still take "
                                          "the larger side.")]
DiffSymmetricOpt = Annotated[bool, typer.Option(help="Ask each statement with the clips in both orders and average "
                                                "P(a) (two model calls a statement instead of one).")]
FpsOpt = Annotated[Optional[float], typer.Option(
    "--fps", metavar="RATE", help="Frames a second to sample each clip at, as VidDiff's baselines do (fitness 4, "
    f"ballsports 5, diving 6, music 1, surgery 1), at most {MAX_SAMPLE_FPS:g} a second and 75 frames a clip. "
    "Default: the LMM family's own frames.")]


def diff(videos: VideosArg, action: ActionOpt, statement: StatementOpt = None, statements: StatementsOpt = None,
         open_n: OpenOpt = None, reranker: DiffRerankerOpt = DEFAULT_DIFF_MODEL, mode: DiffModeOpt = "expected",
         symmetric: DiffSymmetricOpt = False, fps: FpsOpt = None, rerank_batch: RerankBatchOpt = None,
         index_dir: DiffIndexDirOpt = None, device: DeviceOpt = None, html: HtmlOpt = None, as_json: JsonOpt = False):
    """What differs between clips of the same action, and in which clip? Closed mode places given statements
    (--statement, --statements), open mode (--open N) lets the LMM list differences; with more than two clips,
    ranks the others by how much they differ from the first."""
    from retrieval.api import DiffRequest, Engine, gather_statements

    check_page(html)
    check_mode(mode)
    if len(videos) < 2:
        raise UserError("give two clips to compare (A B), or a reference and the clips to rank (A B C ...)")
    if open_n is not None and (statement or statements is not None):
        raise UserError("give statements (closed mode) or --open N (open mode), not both")
    given = None if open_n is not None else \
        gather_statements(statement or [], None if statements is None else str(statements))
    engine = Engine(_diff_index(index_dir, videos[0]), device=device, rerank_batch=rerank_batch)
    pair = len(videos) == 2
    request = DiffRequest(videos[0], videos[1] if pair else None, () if pair else videos[1:], action, given, open_n,
                          reranker, mode, symmetric, fps)
    if pair:
        result = engine.diff(request)
        if html is not None:
            page_written("page", write_diff_html(result, videos[0], videos[1], html))
    else:
        with counting("candidates", len(videos) - 1, as_json) as advance:
            result = engine.diff(request, progress=lambda event, data: advance(data["done"], data["total"]))
        if html is not None:
            page_written("page", write_diff_ranking_html(result, videos[0], html))
    show_diff(result, not pair, as_json)


def _diff_index(index_dir: Optional[Path], a: Path) -> Optional[Path]:
    """Where the answer cache lives: the given index, else the nearest one, else none (the user cache folder)."""
    from retrieval.api import find_index_dir

    return resolve_index_dir(index_dir, a) if index_dir is not None else find_index_dir(a.parent, Path.cwd())
