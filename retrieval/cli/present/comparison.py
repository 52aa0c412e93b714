"""What `convis compare` and `convis diff` print: a pair's per-concept scores, its statements of difference, or
candidates ranked by how much they differ."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.table import Table

from retrieval.api import CANT_TELL, CANT_TELL_MARGIN, RATING, format_span
from retrieval.cli.console import err, out, shown
from retrieval.cli.layout import Block, labelled, print_table
from retrieval.cli.present.common import print_json, print_notices, score

if TYPE_CHECKING:
    from retrieval.api import CompareResult


def print_comparison(result: CompareResult) -> None:
    lmm = result.reranker is not None
    how = f"{result.reranker}, {result.mode}" if lmm else "the index's signals"
    table = Table(title=f"{shown(result.a)} vs {shown(result.b)}  ({how})", title_justify="left")
    scale = next((row.scale for row in result.concepts), RATING)
    columns = ("concept", "weight", "score", f"LMM {scale}", "answer") if lmm else \
        ("concept", "weight", "score", "signal")
    for col in columns:  # a model's free answer may wrap; numbers and signal names are never cut
        table.add_column(col, no_wrap=col not in ("concept", "answer"))
    rows = [(shown(row.concept.words), f"{row.concept.weight:.2f}", score(row.score),
             *((score(row.rating), shown(row.raw)) if lmm else (shown(row.label),)))
            for row in result.concepts]
    for row in rows:
        table.add_row(*row)
    said = f" ({result.confidence})" if getattr(result, "confidence", None) else ""
    table.add_row("total", "", score(result.total) + said, *[""] * (len(columns) - 3), style="bold")
    print_table(out, table, lambda: [Block(f"[bold]{row[0]} {row[2]}[/]", labelled(columns[3:], row[3:]) + [
        f"weight: {row[1]}"]) for row in rows] + [Block(f"[bold]total {score(result.total)}[/]")])
    answer = "an LMM's 1-5 answer r scored (r - 1) / 4" if scale == RATING else f"the reranker's {scale}, as it is"
    detail = answer if lmm else \
        f"B's unit {format_span(result.b_start, result.b_end)}, rank {result.rank} in a query for A"
    out.print(f"[dim]scored by {shown(result.scored_by)}; {detail}[/]", highlight=False)


def show_diff(result, ranked: bool, as_json: bool) -> None:
    """A pair's differences, or candidates ranked by how much they differ from the reference."""
    print_notices(result.notices)
    if as_json:
        print_json(result.to_dict())
    elif ranked:
        print_diff_ranking(result)
    else:
        print_diff(result)


def print_diff(result) -> None:
    how = f"{result.model}, {result.mode}" + (", both orders" if result.symmetric else "")
    table = Table(title=f"{shown(result.a)} (a) vs {shown(result.b)} (b): {shown(result.action)}  ({shown(how)})",
                  title_justify="left")
    rows = result.verdicts if result.closed else [p.verdict for p in result.proposals]
    proposed = {} if result.closed else {p.verdict.key: p.proposed or "-" for p in result.proposals}
    columns = ("key", "statement", *(() if result.closed else ("proposed",)), "more true of", "P(a)", "P(b)", "answer")
    for col in columns:  # the statements and the model's answers may wrap; the verdicts and numbers are never cut
        table.add_column(col, no_wrap=col not in ("statement", "answer"))
    cells = [(shown(v.key), shown(v.statement), *(() if result.closed else (shown(proposed[v.key]),)),
              v.told or "unreadable", score(v.p_a), score(None if v.p_a is None else 1 - v.p_a),
              shown(" | ".join(repr(a.raw) for a in v.answers))) for v in rows]
    for row in cells:
        table.add_row(*row)
    print_table(out, table, lambda: (Block(f"[bold]{row[0]}.[/] {row[1]}", labelled(columns[2:], row[2:]))
                                     for row in cells))
    from retrieval.api import spoken_frames  # NumPy: only a pair's differences pay for it

    for problem in result.problems:
        err.print(f"[yellow]not read from the answer:[/] {shown(problem)}", soft_wrap=True, highlight=False)
    out.print(f"[dim]frames: {shown(spoken_frames(result.frames))}; {_asked(result.model_calls, result.cached)}; "
              f"differences {result.differences:.3f} (sum of |2 P(a) - 1|); {CANT_TELL}: P(a) within "
              f"{CANT_TELL_MARGIN:g} of 0.5[/]", highlight=False)


def _asked(calls: int, cached: int) -> str:
    """``3 model calls``, and how many answers came from the cache when some did."""
    said = f"{calls} model call{'' if calls == 1 else 's'}"
    return said + (f", {cached} answer{'' if cached == 1 else 's'} from the cache" if cached else "")


def print_diff_ranking(ranking) -> None:
    table = Table(title=f"most different from {shown(ranking.reference)}: {shown(ranking.action)}",
                  title_justify="left")
    for col in ("rank", "clip", "differences", "told apart", "strongest"):
        table.add_column(col, no_wrap=col != "strongest")
    for c in ranking.candidates:
        scored = [] if c.result is None else list(c.result.scored)
        top = max(scored, key=lambda v: v.strength, default=None)
        table.add_row(str(c.rank), shown(c.path), f"{c.differences:.3f}",
                      f"{sum(v.told in ('a', 'b') for v in scored)}/{len(scored)}",
                      "-" if top is None else shown(f"{top.statement} ({top.told or 'unreadable'})"))
    print_table(out, table, lambda: (Block(f"[bold]{c.rank}.[/] {shown(c.path)}  differences {c.differences:.3f}")
                                     for c in ranking.candidates))
    out.print(f"[dim]differences: the sum over statements of |2 P(a) - 1|; told apart: statements with P(a) at least "
              f"{CANT_TELL_MARGIN:g} from 0.5; {_asked(ranking.model_calls, ranking.cached)}[/]", highlight=False)
