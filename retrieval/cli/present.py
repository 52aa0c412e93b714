"""What the user reads: tables, JSON, notes and errors on stderr, progress bars, the HTML pages' files.

The one CLI module that may reach below the engine (results, the gallery, registries): rendering needs their
shapes. What only a page or a table of models needs is imported when it is drawn, so that `convis --help`
stays light.
"""

from __future__ import annotations

import json
import sys
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from retrieval.cli.console import printable
from retrieval.cli.layout import Block, fits, labelled, print_blocks, print_table
from retrieval.cli.options import UserError
from retrieval.core.defaults import CANT_TELL, CANT_TELL_MARGIN
from retrieval.core.errors import one_line
from retrieval.core.sampling import spoken_frames
from retrieval.core.timecode import format_span, format_time

if TYPE_CHECKING:
    from retrieval.search.results import CompareResult, QueryResult

# emoji=False: model ids such as "package:..." must print as written
out = Console(emoji=False)
err = Console(stderr=True, emoji=False)


def shown(text: object) -> str:
    """Text a user or a file supplied, ready for a rich print: control characters escaped (``printable``), and
    brackets too, so "[bold]a.mp4" is a name, not markup."""
    return escape(printable(text))


def fail(message: str, code: int = 2) -> NoReturn:
    err.print(f"[bold red]error:[/] {shown(message)}", highlight=False, soft_wrap=True)
    raise typer.Exit(code)


def damaged(exc: Exception) -> NoReturn:
    fail(f"the index's catalog is damaged ({one_line(exc, 160)}); `convis repair` restores its snapshot", 1)


def refused(exc: OSError) -> NoReturn:
    """The system refused: a full disk, a permission, a file where a folder should be."""
    where = f": {exc.filename}" if exc.filename else ""
    fail(f"{exc.strerror or one_line(exc, 200)}{where}", 1)


def print_json(data) -> None:
    sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")


def print_notices(notices) -> None:
    for notice in notices:
        err.print(f"[yellow]note:[/] {shown(notice)}", soft_wrap=True, highlight=False)


def page_written(what: str, page: Path) -> None:
    """``gallery: FILE`` or ``page: FILE`` on stderr, so --json output on stdout stays parseable."""
    err.print(f"{what}: {shown(page)}", highlight=False)


def note(text: str) -> None:
    err.print(f"[yellow]note:[/] {shown(text)}", highlight=False, soft_wrap=True)


class IndexProgress:
    """The run's notes, printed as they come, then a bar that appears once the run knows its files, and one
    for the captioner's pass when there is one."""

    def __init__(self, bar, describing=None):  # rich.progress.Progress bars
        self.bar, self.task, self.noted = bar, None, []
        self.describing, self.described = describing, None
        self.calls, self.seconds = 0, 0.0

    def __call__(self, event: str, data: dict) -> None:
        if event == "note":
            self.noted.append(data["text"])
            note(data["text"])
        elif event == "start" and data["total"]:  # nothing to do: no bar
            self.bar.start()
            self.task = self.bar.add_task("index", total=data["total"], frames=0, rate="", current="")
        elif event == "describe" and self.describing is not None:
            self.stop()  # one live display at a time: the files are done
            self.describing.start()
            self.described = self.describing.add_task("describe", total=data["total"], rate="")
        elif event == "described" and self.described is not None:
            self.calls, self.seconds = self.calls + data["calls"], self.seconds + data["seconds"]
            rate = f"{self.calls / self.seconds:.2f} captions/s" if self.seconds > 0 else ""
            self.describing.update(self.described, advance=1, rate=rate)
        elif event == "file" and self.task is not None:
            self._advance(data)

    def stop(self) -> None:
        if self.task is not None:  # stopping a bar never shown would print an empty line
            self.bar.stop()
            self.task = None
        if self.described is not None:
            self.describing.stop()
            self.described = None

    def _advance(self, data: dict) -> None:
        task = self.bar.tasks[self.task]
        frames = task.fields["frames"] + data["frames"]
        rate = f"{frames / task.elapsed:.1f} frames/s" if task.elapsed else ""
        # file names are the user's: escaped, or rich would read "[bold]a.mp4" as markup
        self.bar.update(self.task, advance=1, frames=frames, rate=rate, current=shown(Path(data["path"]).name[:40]))


@contextmanager
def index_progress(disable: bool):
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    columns = [TextColumn("[bold]indexing"), BarColumn(), MofNCompleteColumn(), TextColumn("files"),
               TextColumn("{task.fields[frames]} frames"), TextColumn("{task.fields[rate]}"), TimeElapsedColumn(),
               TextColumn("{task.fields[current]}")]
    describing = [TextColumn("[bold]describing"), BarColumn(), MofNCompleteColumn(), TextColumn("units"),
                  TextColumn("{task.fields[rate]}"), TimeElapsedColumn()]
    events = IndexProgress(Progress(*columns, console=err, disable=disable, transient=False),
                           Progress(*describing, console=err, disable=disable, transient=False))
    try:
        yield events
    finally:
        events.stop()


def index_summary(report, notices, progress: IndexProgress, folder: Path, as_json: bool) -> None:
    """After an index run: the notes not printed while it ran, the report, and a warning for a folder without
    videos."""
    for notice in notices:
        if notice not in progress.noted:  # the rest were printed before the progress bar
            note(notice)
    if as_json:
        print_json(report.as_dict())
    elif report.found or report.failed:
        print_index_report(report)
    if not report.found:
        err.print(f"[yellow]warning:[/] no video files in {shown(str(folder))} (.mp4, .mov, .mkv, .webm, .avi "
                  "and other video extensions); nothing was indexed or recorded", highlight=False, soft_wrap=True)


def describe_summary(report, as_json: bool) -> None:
    if as_json:
        print_json(report.as_dict())
        return
    c = report.counts
    rate = f", {c.per_second:.2f} captions/s" if c.seconds else ""
    out.print(f"described {c.described} of {report.units} unit(s) lacking {printable(', '.join(report.concepts))}: "
              f"{c.calls} model calls{rate}; {report.description_vectors} description(s) embedded; "
              f"{report.seconds:.1f} s", highlight=False, markup=False)


def print_index_report(report) -> None:
    failed = f"failed {len(report.failed)}"
    if report.excluded:
        failed += (f"; {report.excluded} removed file{'s' if report.excluded != 1 else ''} skipped (convis ls "
                   "--removed lists them; convis remove --undo FILE puts one back)")
    if report.failed_earlier:
        failed += f" ({report.failed_earlier} unchanged since an earlier run, not retried: --retry-failed)"
    out.print(f"indexed {report.indexed} file(s), {report.units} unit(s), {report.frames} frames in "
              f"{report.seconds:.1f} s; unchanged {report.unchanged}; forgotten {report.forgotten}; "
              + (f"unavailable {report.unavailable} (kept, not searched); " if report.unavailable else "") + failed
              + (f"; captions {report.captioned}" if report.captioned else "")
              + (f"; described {report.described} unit(s) ({report.describe_calls} model calls)"
                 if report.described else ""), highlight=False)
    out.print(f"indexers: {printable(', '.join(report.indexers))}", highlight=False, markup=False)
    if report.failed:
        table = Table(title="skipped files", title_justify="left")
        table.add_column("file", no_wrap=True)
        table.add_column("reason", overflow="fold")
        for path, reason in report.failed:
            table.add_row(shown(path), shown(reason))
        print_table(out, table, lambda: (Block(shown(path), [shown(reason)]) for path, reason in report.failed))


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
    like = "clips least like" if getattr(result, "most_different", False) else "clips like"
    title = f"{like} {shown(_anchor_title(result))}  ({shown(weights)}){changed}"
    ranked = any(hit.keyword for hit in result.hits)  # a keyword or hybrid search: each list's rank, the words
    full, short = _hits_table(result, title, True, ranked), _hits_table(result, title, False, ranked)
    narrow = _hits_table(result, title, False, False)
    if fits(out, full):
        out.print(full)
    elif fits(out, short) or fits(out, narrow):  # the signals under each concept's name did not fit: said below
        out.print(short if fits(out, short) else narrow)
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
    out.print(f"[dim]scored by {shown(result.how_scored)}{scale}[/]", highlight=False)
    if getattr(result, "mode", None) == "hybrid":
        out.print("[dim]hybrid: ranked by reciprocal rank fusion of the keyword and vector ranks, 1/(60 + rank) "
                  "summed; total is the vector score[/]", highlight=False)
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
        signals = "\n+ ".join(map(shown, result.label(c.key).split(" + ")))  # one a line
        header = f"{shown(c.key)}\n[dim]{signals}[/]" if scorers else shown(c.key)
        table.add_column(header, justify="right", no_wrap=True)
    parts = _parts(result)
    for part in parts:  # a composed query: what of the total came from staying alike, what from the change
        table.add_column(part, justify="right", no_wrap=True)
    table.add_column("total", justify="right", style="bold", no_wrap=True)
    table.add_column("confidence", no_wrap=True)  # the label --explain explains
    for column in KEYWORD_COLUMNS if ranked else ():
        table.add_column(column, justify="right" if column != "matched" else "left", no_wrap=column != "matched")
    for hit in result.hits:
        table.add_row(str(hit.rank), shown(hit.path), format_span(hit.start, hit.end),
                      *[_score(hit.scores[c.key]) for c in result.concepts],
                      *[_score(hit.composed.get(p)) for p in parts], _score(hit.total), result.confidence(hit) or "",
                      *(_keyword_cells(hit) if ranked else ()))
    return table


KEYWORD_COLUMNS = ("kw rank", "vec rank", "matched")


def _print_best_lines(out, hits) -> None:
    """Each hit's first line that holds a query word (on screen, subtitle, speech) with its time."""
    for hit in hits:
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
    lines = [f"{shown(c.key)} {_score(hit.scores[c.key])}  [dim]({shown(result.label(c.key))})[/]"
             for c in result.concepts]
    lines += [f"{part} {_score(hit.composed.get(part))}" for part in _parts(result)]
    if hit.keyword:
        lines.append("keyword rank {}, vector rank {}, matched: {}".format(*_keyword_cells(hit)))
    confidence = result.confidence(hit)
    return Block(f"[bold]{hit.rank}.[/] {shown(hit.path)}  {format_span(hit.start, hit.end)}  "
                 f"[bold]total {_score(hit.total)}[/]" + (f" ({confidence})" if confidence else ""), lines)


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
    from retrieval.search.signals import scorer_label

    return scorer_label(model_id)


def _contribution_line(hit, concept: str) -> str:
    """``main-action 0.417 = 0.618 average pair - 0.190 text (similarity 0.702)``: a fused score, term by term."""
    parts, given = hit.contributions[concept], hit.inputs.get(concept, {})
    terms = " ".join(f"{'+' if v >= 0 else '-'} {abs(v):.3f} {_signal_input(name, given.get(name))}"
                     for name, v in parts.items() if name != "intercept")
    return f"{concept} {_score(hit.scores[concept])} = {parts['intercept']:.3f} average pair {terms}"


def _signal_input(signal: str, value) -> str:
    """A fusion input as a reader knows it: an indexer's similarity, or an LMM's 1-5 answer."""
    from retrieval.search.fusion import RERANKER_PREFIX

    if value is None:
        return signal
    if signal.startswith(RERANKER_PREFIX):
        return f"{signal[len(RERANKER_PREFIX):]} (answer {value:.2f} of 5)"
    return f"{signal} (similarity {value:.3f})"


def _score(value) -> str:
    return "unreadable" if value is None else f"{value:.3f}"



def print_comparison(result: CompareResult) -> None:
    lmm = result.reranker is not None
    how = f"{result.reranker}, {result.mode}" if lmm else "the index's signals"
    table = Table(title=f"{shown(result.a)} vs {shown(result.b)}  ({how})", title_justify="left")
    columns = ("concept", "weight", "score", "LMM 1-5", "answer") if lmm else ("concept", "weight", "score", "signal")
    for col in columns:  # a model's free answer may wrap; numbers and signal names are never cut
        table.add_column(col, no_wrap=col not in ("concept", "answer"))
    rows = [(shown(row.concept.words), f"{row.concept.weight:.2f}", _score(row.score),
             *((_score(row.rating), shown(row.raw)) if lmm else (shown(row.label),)))
            for row in result.concepts]
    for row in rows:
        table.add_row(*row)
    table.add_row("total", "", _score(result.total), *[""] * (len(columns) - 3), style="bold")
    print_table(out, table, lambda: [Block(f"[bold]{row[0]} {row[2]}[/]", labelled(columns[3:], row[3:]) + [
        f"weight: {row[1]}"]) for row in rows] + [Block(f"[bold]total {_score(result.total)}[/]")])
    detail = "an LMM's 1-5 answer r scored (r - 1) / 4" if lmm else \
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


@contextmanager
def counting(what: str, total: int, quiet: bool):
    """A bar on stderr for work done a piece at a time; yields ``progress(done, total)``."""
    from retrieval.cli.console import counting as bar

    with bar(what, total, quiet) as progress:
        yield progress


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
              v.told or "unreadable", _score(v.p_a), _score(None if v.p_a is None else 1 - v.p_a),
              shown(" | ".join(repr(a.raw) for a in v.answers))) for v in rows]
    for row in cells:
        table.add_row(*row)
    print_table(out, table, lambda: (Block(f"[bold]{row[0]}.[/] {row[1]}", labelled(columns[2:], row[2:]))
                                     for row in cells))
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


def print_info(summary: dict, as_json: bool) -> None:
    if as_json:
        print_json(summary)
        return
    out.print(f"index {shown(summary['index_dir'])} of {shown(summary['root'])} (protocol {summary['protocol']})",
              highlight=False)
    unavailable, removed = summary.get("files_unavailable"), summary.get("files_removed")
    out.print(f"files ok {summary['files_ok']}, failed {summary['files_failed']}"
              + (f", unavailable {unavailable} (folder missing or not mounted; kept, not searched)" if unavailable
                 else "") + (f", removed {removed} (convis ls --removed)" if removed else "")
              + f", units {summary['units']} ({summary['units_by']})", highlight=False)
    if summary.get("shots"):
        shots = summary["shots"]
        confidence = shots["mean_cut_confidence"]
        out.print(f"  shots: {shots['cuts']} cut(s) (mean confidence "
                  f"{'n/a' if confidence is None else f'{confidence:.2f}'}), {shots['splits']} split(s) of long "
                  f"shots, mean unit {shots['mean_unit_seconds']} s", highlight=False)
    for row in summary["indexers"]:
        count = summary["vectors"].get(row["indexer"], 0)
        out.print(f"  {shown(row['indexer'])}  {row['kind']}  dim {row['dim']}  {count} vectors  faiss "
                  f"{shown(row['faiss'])}",
                  highlight=False)
    for signal in summary["cross_modal_signals"]:
        out.print(f"  {signal}  cross-modal (--signal CONCEPT=clipscore)", highlight=False)
    for row in summary.get("descriptions", []):
        out.print(f"  {shown(_described_line(row))}", highlight=False)
    for failure in summary["failures"]:
        out.print(f"  [red]failed[/] {shown(failure['path'])}: {shown(failure['error'] or '')}", highlight=False)


def _described_line(row: dict) -> str:
    """``location descriptions: 9 unit(s) by file -> text#location``: who described a concept, and its signal."""
    from retrieval.store.catalog.records import FILE_KEY

    by = ", ".join(f"{units} unit(s) by {'text files' if model == FILE_KEY.model else _scorer_name(model)}"
                   for model, units in row["described_by"].items())
    if row["signals"]:
        used = " -> " + ", ".join(map(_scorer_name, row["signals"]))
    else:  # captions are the text indexer's own input; another concept unembedded is used by no query
        used = " (the text indexer's input)" if row["concept"] == "caption" else " (not embedded: no query uses them)"
    return f"{row['concept']} descriptions: {by}{used}"


def print_repair(where: Path, restored, as_json: bool) -> None:
    if as_json:
        print_json({"index_dir": str(where.resolve()), "repaired": restored is not None,
                    **({"kept_aside": str(restored.kept_aside), "snapshot_time": restored.snapshot_time,
                        "files": restored.files} if restored else {})})
        return
    out.print(printable(restored) if restored else f"the catalog in {printable(where)} is whole; nothing to repair",
              highlight=False, markup=False)


def print_removed(changed, undo: bool, as_json: bool) -> None:
    """What ``remove`` did (``changed``: the paths), or its undo (``changed``: an ``Undone``)."""
    if not undo:
        if as_json:
            print_json({"removed": changed})
            return
        out.print(f"removed {len(changed)} file(s) from the index: {printable(', '.join(changed))}; the files stay "
                  "on disk, their vectors are kept and later runs skip them (convis remove --undo FILE puts them "
                  "back; convis ls --removed lists them)", highlight=False, markup=False)
        return
    if as_json:
        print_json({"restored": changed.restored, "to_index": changed.to_index})
        return
    if changed.restored:
        out.print(f"restored {len(changed.restored)} file(s) with their stored vectors, searchable now: "
                  f"{printable(', '.join(changed.restored))}", highlight=False, markup=False)
    if changed.to_index:
        out.print(f"the next `convis index` run indexes {len(changed.to_index)} file(s) again (removed before "
                  f"vectors were kept): {printable(', '.join(changed.to_index))}", highlight=False, markup=False)


def print_removed_listing(root: Path, removed: list, as_json: bool) -> None:
    """The files taken out of the index (``RemovedFile``s): when, and whether an undo restores them at once."""
    if as_json:
        print_json({"root": str(root), "removed": [{"path": f.path, "removed_at": f.removed_at, "kept": f.kept,
                                                    "units": f.units, "status": f.status} for f in removed]})
        return
    table = Table(title=f"{len(removed)} removed file(s) in {shown(str(root))} (convis remove --undo FILE puts one "
                  "back)", title_justify="left")
    columns = ("path", "removed", "units", "undo")
    for col in columns:  # names, times and counts are never cut
        table.add_column(col, no_wrap=col != "undo", justify="right" if col == "units" else "left")
    rows = [(shown(f.path), f.removed_at.replace("T", " "), str(f.units),
             "restores its vectors" if f.kept else "next index run re-embeds") for f in removed]
    for row in rows:
        table.add_row(*row)
    print_table(out, table, lambda: (Block(row[0], labelled(columns[1:], row[1:])) for row in rows))


def print_listing(root: Path, files: list, as_json: bool) -> None:
    if as_json:
        print_json({"root": str(root), "files": [listing_record(f) for f in files]})
        return
    table = Table(title=f"{len(files)} file(s) in {shown(str(root))}", title_justify="left")
    columns = ("path", "duration", "units", "status", "caption")
    for col in columns:  # a status's reason may wrap; names and numbers are never cut
        table.add_column(col, no_wrap=col != "status", justify="right" if col in ("duration", "units") else "left")
    rows = [(shown(f.path), format_time(f.duration) if f.duration is not None else "", str(len(f.units)),
             _shown_status(f), "yes" if f.captioned else "") for f in files]
    for row in rows:
        table.add_row(*row)
    print_table(out, table, lambda: (Block(row[0], labelled(columns[1:], row[1:])) for row in rows))


def _shown_status(f) -> str:
    """ok (with what of a damaged file could not be decoded), unavailable (its folder offline: vectors kept), or
    failed with the reason."""
    if f.status == "ok":
        return f"ok ({shown(f.error)})" if f.error else "ok"
    return f"failed: {shown(f.error or '')}" if f.status == "failed" else f.status


def listing_record(f) -> dict:
    failed = f.status == "failed"
    return {"path": f.path, "status": f.status, "error": f.error if failed else None,
            "undecoded": None if failed else f.error,  # a damaged file indexed from what decodes: what did not
            "duration": f.duration, "width": f.width, "height": f.height, "captioned": f.captioned,
            "units_by": f.units_by or None, "size": f.size, "mtime": f.mtime, "fps": f.fps, "codec": f.codec,
            "fields": dict(f.fields),
            "units": [{"segment": seg, "start": start, "end": end, **_cut_record(f, i),
                       **_unit_lines(f, start, end)} for i, (seg, start, end) in enumerate(f.units)]}


def _unit_lines(f, start: float, end: float) -> dict:
    """A unit's timed lines (those whose time overlaps it, as search counts them); nothing when it has none."""
    from retrieval.search.hit_lines import as_dict
    from retrieval.store.catalog.lines import in_unit

    shown = [as_dict(x) for x in getattr(f, "lines", ()) if in_unit(x, start, end)]
    return {"lines": shown} if shown else {}


def _cut_record(f, i: int) -> dict:
    """A shot unit's boundary (what starts it: start, cut or split) and the cut's confidence; nothing for fixed
    units."""
    if i >= len(f.cuts) or f.cuts[i][0] is None:
        return {}
    boundary, confidence = f.cuts[i]
    return {"boundary": boundary, "confidence": None if confidence is None else round(confidence, 4)}


def model_rows(protocol: str) -> list[dict]:
    """The registered indexers (as ``protocol`` builds them), rerankers and pair signals, as `models` lists them."""
    from indexers.base import INDEXERS, PROTOCOLS
    from indexers.factory import available_indexers
    from rerankers.base import RERANKERS
    from rerankers.factory import available_rerankers
    from retrieval.core.signal_kinds import SIGNALS

    if protocol not in PROTOCOLS:
        raise UserError(f"--protocol is one of {', '.join(PROTOCOLS)}, got {protocol!r}")
    rows = [_model_row("indexer", INDEXERS.entry(n), protocol, INDEXERS.entry(n).card.get(protocol, {}))
            for n in available_indexers()]
    rows += [_model_row("reranker", RERANKERS.entry(n), None, RERANKERS.entry(n).card) for n in available_rerankers()]
    return rows + [_signal_row(SIGNALS.entry(n)) for n in SIGNALS.names()]


MODELS_CAPTION = ("weights: bundled (installed with a package), cached (Hugging Face cache), local folder, download "
                  "on first use, missing (offline and not cached), or unsupported (convis cannot run that model)")
MODEL_COLUMNS = ("kind", "name", "default", "weights")
FED_COLUMNS = ("frames", "size", "pooling", "dtype")  # --full: what each model is fed


def print_models(rows: list[dict], full: bool, as_json: bool) -> None:
    if as_json:
        print_json(rows)
        return
    fed = FED_COLUMNS if full else ()
    table = Table(caption=MODELS_CAPTION, caption_justify="left")
    for col in (*MODEL_COLUMNS, *fed):  # names, ids and weights are never cut; what a model is fed may wrap
        table.add_column(col, no_wrap=col in MODEL_COLUMNS)
    for row in rows:
        table.add_row(*(shown(str(row.get(c, ""))) for c in (*MODEL_COLUMNS, *fed)))
    print_table(out, table, lambda: (Block(f"[bold]{shown(row['name'])}[/] ({row['kind']})", labelled(
        ("default", "weights", *fed), (shown(str(row.get(c, ""))) for c in ("default", "weights", *fed))))
        for row in rows), MODELS_CAPTION)


def _signal_row(entry) -> dict:
    """A registered pair signal (CLIPScore, VQAScore): the model it asks by default and its definition."""
    kind = entry.build(None)
    return {"kind": "signal", "name": entry.name, "default": kind.model or "the index's first CLIP-family indexer",
            "weights": "-", "description": kind.definition, "family": kind.family, "cost": kind.cost,
            # what it is fed is its model's: the CLIP-family indexer's frames, the LMM's own frame rule
            **{field: "its model's" for field in ("frames", "size", "pooling", "dtype")}}


def _model_row(kind: str, entry, variant: str | None, card: dict) -> dict:
    return {"kind": kind, "name": entry.name, "default": entry.source_for(variant),
            "weights": entry.weights_for(variant), "description": entry.description, **card}


def write_query_html(*args, index_dir: Path, **kwargs) -> Path:
    """The gallery page; a file browsers cannot play links the preview `convis serve` made of it, if any."""
    from retrieval.media.preview import Previews
    from retrieval.serve.gallery import write_query_html as write  # decoders: only a page pays for them
    from retrieval.serve.playback import PREVIEWS_DIRNAME

    return write(*args, previews=Previews(index_dir / PREVIEWS_DIRNAME), **kwargs)


def write_diff_html(*args, **kwargs) -> Path:
    from retrieval.serve.gallery import write_diff_html as write

    return write(*args, **kwargs)


def write_diff_ranking_html(*args, **kwargs) -> Path:
    from retrieval.serve.gallery import write_diff_ranking_html as write

    return write(*args, **kwargs)


def write_compare_html(*args, **kwargs) -> Path:
    from retrieval.serve.gallery import write_compare_html as write

    return write(*args, **kwargs)

