"""What `convis query` and `convis search` print: the hits as a table (or one block a hit on a narrow terminal),
with how each score was made, their best timed lines and how the confidence labels are read."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

import typer
from rich.table import Table

from retrieval import api
from retrieval.api import RATING, format_span
from retrieval.cli.console import out, shown
from retrieval.cli.layout import Block, fits, print_blocks
from retrieval.cli.present.common import print_json, print_notices, score

if TYPE_CHECKING:
    from retrieval.api import CompareResult, QueryResult


def show(result: QueryResult | CompareResult, as_json: bool, as_table, explain: bool = False) -> None:
    """Notes on stderr, then the result as JSON or as ``as_table`` prints it (``explain``: and how its confidence
    labels are read)."""
    print_notices(result.notices)
    if as_json:
        print_json(result.as_dict())
    else:
        as_table(result)
        if explain:
            explain_confidence(result)


def explain_confidence(result: QueryResult) -> None:
    """What the labels were read against: each signal's background and the cut points, or the relative rule."""
    if result.calibration is None:
        rule = result.spread.as_dict()["rule"] if result.spread is not None else "no scores to label"
        out.print(f"confidence: relative to this query's own scores: {shown(rule)}", highlight=False, soft_wrap=True)
        return
    explained = result.calibration.as_dict()
    out.print(f"confidence: {shown(explained['rule'])}", highlight=False, soft_wrap=True)
    for signal, reference in explained["references"].items():
        out.print(f"  {shown(_scorer_name(signal))}: {shown(reference)}", highlight=False, soft_wrap=True)


def print_hits(result: QueryResult) -> None:
    if not result.hits:
        out.print(f"no results for {shown(_anchor_title(result))}: {shown(result.empty_reason or '')}",
                  highlight=False, soft_wrap=True)
        raise typer.Exit(1)
    weights = ", ".join(f"{c.key}={c.weight:.2f}" for c in result.concepts)
    change = result.change
    changed = f', changed: "{shown(change["text"])}" (weight {change["weight"]:g})' if change else ""
    like = "clips matching" if getattr(result, "text", None) else \
        "clips least like" if getattr(result, "most_different", False) else "clips like"
    title = f"{like} {shown(_anchor_title(result))}  ({shown(weights)}){changed}"
    ranked = any(hit.keyword for hit in result.hits)  # a keyword or hybrid search: each list's rank, the words
    full, short = _hits_table(result, title, True, ranked), _hits_table(result, title, False, ranked)
    narrow = _hits_table(result, title, False, False)
    compact = _compact_table(result, title)
    if fits(out, full):
        out.print(full)
    elif fits(out, short) or fits(out, narrow) or fits(out, compact):  # what scored each column: said below
        out.print(next(t for t in (short, narrow, compact) if fits(out, t)))
        out.print(f"[dim]columns scored by: {shown(_scorers(result))}[/]", highlight=False)
        if ranked and not fits(out, short):  # nor each hit's ranks: one line a hit
            for hit in result.hits:
                out.print("[dim]  {}. keyword rank {}, vector rank {}, matched: {}[/]".format(
                    hit.rank, *_keyword_cells(hit)), highlight=False)
    else:
        print_blocks(out, title, map(partial(_hit_block, result), result.hits))
    _print_best_lines(out, result.hits)
    if result.no_match:
        out.print(f"[yellow]{shown(result.as_dict()['no_match_note'])}[/]", highlight=False)
    if change:
        out.print(f"[dim]total = (stay + {change['weight']:g} x change) / {1 + change['weight']:g}; change: the "
                  f"change text against {shown(', '.join(_scorer_name(s) for s in change['signals']))}[/]",
                  highlight=False)
        if change.get("footnote"):
            out.print(f"[dim]{shown(change['footnote'])}[/]", highlight=False)
    how = result.reranker or result.fusion
    scale = "; 1-5 ratings r scored (r - 1) / 4, --json keeps them" if how else ""
    if result.reranker and any(hit.rating_scale != RATING for hit in result.hits):
        scale = f"; the reranker's {result.hits[0].rating_scale} as it is (its own scale, not 1-5)"
    out.print(f"[dim]scored by {shown(result.how_scored)}{scale}[/]", highlight=False)
    if getattr(result, "mode", None) == "hybrid":
        out.print(f"[dim]{shown(api.HYBRID_RULE)}[/]", highlight=False)  # read here: loading it loads search
    if result.beside and not how:
        out.print("[dim]a concept with two signals scores the mean of their similarities (--json: each hit's "
                  "evidence)[/]", highlight=False)
    if any(hit.contributions for hit in result.hits):
        out.print("[dim]fused scores: the average rated pair's score, plus or minus what each signal adds[/]",
                  highlight=False)
    for hit in result.hits:
        for concept in hit.contributions:
            out.print(f"[dim]  {hit.rank}. {shown(_contribution_line(hit, concept))}[/]", highlight=False)


def _hits_table(result: QueryResult, title: str, scorers: bool, ranked: bool = False) -> Table:
    """The hits as a table; ``scorers``: under each concept's name, the signals that scored it, one a line;
    ``ranked``: each hit's keyword rank, vector rank and matched terms."""
    table = Table(title=title, title_justify="left")
    table.add_column("rank", justify="right", no_wrap=True)
    table.add_column("clip", no_wrap=True)
    table.add_column("time", justify="right", no_wrap=True)
    for c in result.concepts:
        table.add_column(concept_header(c.key, result.label(c.key)) if scorers else shown(c.key), justify="right",
                         no_wrap=True)
    parts = _parts(result)
    for part in parts:  # a composed query: what of the total came from staying alike, what from the change
        table.add_column(part, justify="right", no_wrap=True)
    table.add_column("total", justify="right", style="bold", no_wrap=True)
    table.add_column("confidence", no_wrap=True)  # the label --explain explains
    for column in KEYWORD_COLUMNS if ranked else ():
        table.add_column(column, justify="right" if column != "matched" else "left", no_wrap=column != "matched")
    for hit in result.hits:
        table.add_row(str(hit.rank), shown(hit.path), format_span(hit.start, hit.end),
                      *[score(hit.scores[c.key]) for c in result.concepts],
                      *[score(hit.composed.get(p)) for p in parts], score(hit.total), result.confidence(hit) or "",
                      *(_keyword_cells(hit) if ranked else ()))
    return table


def _compact_table(result: QueryResult, title: str) -> Table:
    """The same table for a terminal too narrow for a column a concept: the concepts' scores share one column
    that may wrap, so many concepts (or a change's stay and change) keep the table's shape."""
    table = Table(title=title, title_justify="left")
    table.add_column("rank", justify="right", no_wrap=True)
    table.add_column("clip", no_wrap=True)
    table.add_column("scores")
    table.add_column("total", justify="right", style="bold", no_wrap=True)
    table.add_column("confidence", no_wrap=True)
    for hit in result.hits:
        scores = [f"{shown(c.key)} {score(hit.scores[c.key])}" for c in result.concepts]
        scores += [f"{part} {score(hit.composed.get(part))}" for part in _parts(result)]
        table.add_row(str(hit.rank), shown(hit.path), ", ".join(scores), score(hit.total),
                      result.confidence(hit) or "")
    return table


KEYWORD_COLUMNS = ("kw rank", "vec rank", "matched")


def concept_header(key: str, label: str) -> str:
    """A concept's column named with what scored it, on one line: ``main-objects (text)``; a column named after
    its own signal (a search's ``text#location``) says it once."""
    return shown(key) if label == key else f"{shown(key)} [dim]({shown(label)})[/]"


def _print_best_lines(out, hits) -> None:
    """Each hit's first line that holds a query word (on screen, subtitle, speech) with its time, and the other
    files that hold its bytes."""
    for hit in hits:
        if getattr(hit, "same_bytes_as", ()):
            out.print(f"[dim]  {hit.rank}. the same bytes are also at {shown(', '.join(hit.same_bytes_as))}[/]",
                      highlight=False)
        if getattr(hit, "lines", ()):
            line = hit.lines[0]
            out.print(f"[dim]  {hit.rank}. {line['source']} {format_span(line['start'], line['end'])}:[/] "
                      f"{shown(line['text'])}", highlight=False)


def _keyword_cells(hit) -> tuple[str, str, str]:
    """A hit's keyword rank, vector rank and matched terms ("-": not ranked by that list)."""
    ranks = (hit.keyword.get("keyword_rank"), hit.keyword.get("vector_rank"))
    return (*("-" if r is None else str(r) for r in ranks), shown(" ".join(hit.keyword.get("matched_terms", ()))))


def _hit_block(result: QueryResult, hit) -> Block:
    """A hit as lines, for a terminal too narrow for the table: its clip and span, then one line a score."""
    lines = [f"{shown(c.key)} {score(hit.scores[c.key])}  [dim]({shown(result.label(c.key))})[/]"
             for c in result.concepts]
    lines += [f"{part} {score(hit.composed.get(part))}" for part in _parts(result)]
    if hit.keyword:
        lines.append("keyword rank {}, vector rank {}, matched: {}".format(*_keyword_cells(hit)))
    confidence = result.confidence(hit)
    return Block(f"[bold]{hit.rank}.[/] {shown(hit.path)}  {format_span(hit.start, hit.end)}  "
                 f"[bold]total {score(hit.total)}[/]" + (f" ({confidence})" if confidence else ""), lines)


def _parts(result: QueryResult) -> tuple[str, ...]:
    return ("stay", "change") if result.change else ()


def _scorers(result: QueryResult) -> str:
    return "; ".join(f"{c.key}: {result.label(c.key)}" for c in result.concepts)


def _anchor_title(result: QueryResult) -> str:
    """The anchor and, when the query used part of it, its window: ``long.mp4 1:00.0-1:20.0``; a text
    search's sentence in quotes."""
    if getattr(result, "text", None):
        return f'"{result.text}"'
    if result.start is None and result.end is None:
        return result.anchor
    return f"{result.anchor} {format_span(result.start or 0.0, result.end)}"


def _scorer_name(model_id: str) -> str:
    from retrieval.api import scorer_label

    return scorer_label(model_id)


def _contribution_line(hit, concept: str) -> str:
    """``main-action 0.417 = 0.618 average pair - 0.190 text (similarity 0.702)``: a fused score, term by term."""
    parts, given = hit.contributions[concept], hit.inputs.get(concept, {})
    terms = " ".join(f"{'+' if v >= 0 else '-'} {abs(v):.3f} {_signal_input(name, given.get(name))}"
                     for name, v in parts.items() if name != "intercept")
    return f"{concept} {score(hit.scores[concept])} = {parts['intercept']:.3f} average pair {terms}"


def _signal_input(signal: str, value) -> str:
    """A fusion input as a reader knows it: an indexer's similarity, or an LMM's 1-5 answer."""
    from retrieval.api import RERANKER_PREFIX

    if value is None:
        return signal
    if signal.startswith(RERANKER_PREFIX):
        return f"{signal[len(RERANKER_PREFIX):]} (answer {value:.2f} of 5)"
    return f"{signal} (similarity {value:.3f})"
