"""``convis query`` (clips like an anchor, by concept) and ``convis search`` (clips that match a text)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, List, Optional

import typer

from retrieval.cli.options import (
    DEFAULT_K,
    TIME_EXAMPLES,
    ChangeWeightOpt,
    DeviceOpt,
    ExplainOpt,
    FilterOpt,
    FreeTextOpt,
    HtmlOpt,
    IndexDirOpt,
    ModeOpt,
    MostDifferentOpt,
    NoShareOpt,
    QueryConceptsOpt,
    QueryIndexDirOpt,
    RerankBatchOpt,
    RerankTopOpt,
    ResultsJsonOpt,
    SearchConceptOpt,
    SearchModeOpt,
    SearchTextArg,
    SymmetricOpt,
    TopOpt,
    UserError,
    WhereArg,
    check_mode,
    check_page,
    concepts_to_score,
    parse_duration,
    resolve_index_dir,
)
from retrieval.cli.present.common import page_written
from retrieval.cli.present.pages import write_query_html
from retrieval.cli.present.results import print_hits, show

AnchorOpt = Annotated[Path, typer.Option("--anchor", "-a", metavar="FILE", help="The video to find similar clips "
                                         "for (indexed or not).")]
ChangeOpt = Annotated[Optional[str], typer.Option(
    "--change", metavar="TEXT", help="Clips like the anchor but changed as TEXT says, e.g. \"a cup instead of a "
    "box\": every signal with a text tower reads it (CLIP against frames, the text indexer against captions and "
    "descriptions); each hit's total is (stay + w * change) / (1 + w). Without -c, the concepts the change touches "
    "(its phrases read against each concept's definition) leave the stay term rather than being down-weighted; "
    "\"A instead of B\", \"replace B with A\" and \"swap B for A\" also edit the anchor's caption and descriptions "
    "(B -> A), which the stay term then compares and the touched concepts' edits join the change score. With an "
    "LMM (--reranker, else the index's --captioner) the LMM edits them instead, its answers cached beside the "
    "index; an unusable answer falls back to the rule.")]
StartOpt = Annotated[Optional[str], typer.Option(metavar="TIME", help=f"Use only the anchor from this time "
                                                 f"({TIME_EXAMPLES}).")]
EndOpt = Annotated[Optional[str], typer.Option(metavar="TIME", help="Use only the anchor up to this time.")]
SignalOpt = Annotated[List[str], typer.Option(
    metavar="CONCEPT=SIGNAL", help="Score a concept with one signal: an indexer (dinov2), its descriptions "
    "(text#location), clipscore[:MODEL] or vqascore[:LMM] (asked of the --rerank-top shortlist).")]
RerankerOpt = Annotated[Optional[str], typer.Option(
    "--reranker", "-r", metavar="NAME", help="LMM that rescores the recalled candidates per concept (qwen2.5-vl, "
    "llava-onevision, llava-video, internvl, a hub id or a local folder).")]
FusionOpt = Annotated[Optional[str], typer.Option(
    metavar="FILE|default", help="Score each concept by a learned combination of every available signal: a weights "
    "file from `convis bench fusion`, or 'default' for the weights shipped with convis.")]


def query(anchor: AnchorOpt, concept: QueryConceptsOpt = None, free_text: FreeTextOpt = False, change: ChangeOpt = None,
          change_weight: ChangeWeightOpt = 1.0, most_different: MostDifferentOpt = False, k: TopOpt = DEFAULT_K,
          index_dir: QueryIndexDirOpt = None, start: StartOpt = None, end: EndOpt = None, signal: SignalOpt = None,
          reranker: RerankerOpt = None, rerank_top: RerankTopOpt = 20, mode: ModeOpt = "expected",
          symmetric: SymmetricOpt = False, rerank_batch: RerankBatchOpt = None, no_share: NoShareOpt = False,
          fusion: FusionOpt = None, filters: FilterOpt = None, device: DeviceOpt = None, html: HtmlOpt = None,
          as_json: ResultsJsonOpt = False, explain: ExplainOpt = False):
    """Rank indexed clips by similarity to ANCHOR in terms of one or more concepts (and, with --change, by how
    well they show ANCHOR changed as a sentence says)."""
    from retrieval.api import AnchorSpanError, Change, Engine, QueryRequest, parse_overrides

    check_page(html)
    if not concept and change is None:
        raise UserError("Missing option '--concept' / '-c' (or give --change)")
    concepts = concepts_to_score(concept, mode, free_text) if concept else check_mode(mode) or []
    changed = Change(change, change_weight) if change is not None else None
    engine = Engine(resolve_index_dir(index_dir, anchor), device=device, rerank_batch=rerank_batch,
                    share=not no_share)
    span = parse_duration(start, allow_zero=True, option="--start"), parse_duration(end, option="--end")
    request = QueryRequest(anchor, concepts, k, *span, parse_overrides(signal or [], free_text), reranker=reranker,
                           rerank_top=rerank_top, mode=mode, symmetric=symmetric, fusion=fusion, change=changed,
                           most_different=most_different, where=filters or ())
    try:
        result = engine.query(request)
    except AnchorSpanError as exc:  # said in the words the user typed
        raise UserError(f"--start {start} is past the end of {exc.path.name} ({exc.duration:.1f} s)") from None
    if html is not None:
        page_written("gallery", write_query_html(result, engine.root, html, start=span[0],
                                                                 end=span[1], index_dir=engine.index_dir))
    show(result, as_json, print_hits, explain)


WeightsOpt = Annotated[List[str], typer.Option(metavar="INDEXER=WEIGHT", help="Use only the named signals, "
                                               "weighted as given (default: every indexed signal with a text tower, "
                                               "equally).")]
SearchJsonOpt = Annotated[bool, typer.Option("--json", help="Print results as JSON (a query's, plus \"text\" and "
                                             "\"mode\"; keyword and hybrid hits: keyword_rank, vector_rank, "
                                             "matched_terms).")]


def search(text: SearchTextArg, where: WhereArg = None, index_dir: IndexDirOpt = None, k: TopOpt = DEFAULT_K,
           signal: WeightsOpt = None, concept: SearchConceptOpt = None, free_text: FreeTextOpt = False,
           filters: FilterOpt = None, device: DeviceOpt = None, html: HtmlOpt = None, as_json: SearchJsonOpt = False,
           explain: ExplainOpt = False, mode: SearchModeOpt = None):
    """Rank indexed clips by how well they match TEXT, with every indexed signal that has a text tower
    (captions embedded by the text indexer, CLIP), or with one concept's descriptions (--concept). One
    text-tower pass per signal; no LMM is asked. The keyword index (--mode) finds exact words."""
    from retrieval.api import Engine, SearchRequest, parse_weights

    check_page(html)
    weights = parse_weights(signal or [])
    engine = Engine(resolve_index_dir(index_dir or where), device=device)
    result = engine.search(SearchRequest(text, k, weights, concept=concept, free_text=free_text, where=filters or (),
                                         mode=mode))
    if html is not None:
        page_written("gallery", write_query_html(result, engine.root, html,
                                                                 index_dir=engine.index_dir))
    show(result, as_json, print_hits, explain)
