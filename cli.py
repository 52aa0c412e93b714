"""convis command line: index a folder of videos, query it by concept, compare pairs, run benchmarks.

``python cli.py ...`` and the installed ``convis ...`` are the same app.
"""

from __future__ import annotations

import json
import re
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import List, Optional

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from bench.cli import app as bench_app
from indexers.base import INDEXERS, PROTOCOLS
from indexers.errors import ModelUnavailableError
from indexers.factory import available_indexers
from rerankers.base import MODES, RERANKERS, RerankerError
from rerankers.factory import available_rerankers
from retrieval.core.concepts import Concept, ConceptError, parse_concepts
from retrieval.core.registry import UnknownModelError
from retrieval.engine import INDEX_DIRNAME, Engine, NoIndexError, find_index_dir
from retrieval.pipeline.indexing import IndexSettingsError
from retrieval.pipeline.ray_pipeline import RayUnavailable
from retrieval.pipeline.settings import IndexSettings
from retrieval.search.anchor import AnchorError
from retrieval.search.fusion import FusionError
from retrieval.search.results import CompareResult, QueryResult
from retrieval.search.signals import SignalError, parse_overrides
from retrieval.serve.gallery import write_compare_html, write_query_html
from retrieval.serve.server import serve as run_server
from retrieval.store.catalog import CatalogBusy

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="Concept-conditioned video retrieval: find clips like this one, in terms of a concept.")
# emoji=False: model ids such as "package:..." must print as written
out = Console(emoji=False)
err = Console(stderr=True, emoji=False)


class UserError(Exception):
    """Anything the user can fix: printed as one line, exit code 2."""


def fail(message: str, code: int = 2) -> None:
    err.print(f"[bold red]error:[/] {message}", highlight=False, soft_wrap=True)
    raise typer.Exit(code)


@contextmanager
def user_errors():
    """Turn the engine's expected failures into one line and a non-zero exit, never a traceback."""
    expected = (UserError, ModelUnavailableError, CatalogBusy, ConceptError, AnchorError, NoIndexError,
                IndexSettingsError, UnknownModelError, SignalError, NotADirectoryError, FileNotFoundError,
                RerankerError, FusionError, RayUnavailable)
    try:
        yield
    except expected as exc:
        fail(str(exc).strip() or type(exc).__name__)
    except KeyboardInterrupt:
        fail("interrupted; what was committed stays indexed, run the same command to resume", 130)


def parse_duration(text: str | None, allow_zero: bool = False) -> float | None:
    """``10s``, ``2m``, ``1m30s``, ``90`` -> seconds."""
    if text is None:
        return None
    match = re.fullmatch(r"\s*(?:(\d+(?:\.\d+)?)m)?\s*(?:(\d+(?:\.\d+)?)s?)?\s*", text)
    if not match or not any(match.groups()):
        raise UserError(f"not a duration: {text!r} (try 10s, 2m or 1m30s)")
    seconds = float(match.group(1) or 0) * 60 + float(match.group(2) or 0)
    if seconds < 0 or (seconds == 0 and not allow_zero):
        raise UserError(f"duration must be positive: {text!r}")
    return seconds


def resolve_index_dir(index_dir: Optional[Path], *near: Path) -> Path:
    if index_dir is not None:
        return index_dir
    found = find_index_dir(*[p.parent if p.is_file() else p for p in near], Path.cwd())
    if found is None:
        raise UserError(f"no {INDEX_DIRNAME} index found near {near[0] if near else Path.cwd()}; "
                        "pass --index-dir or run `convis index FOLDER` first")
    return found


def check_mode(mode: str) -> None:
    if mode not in MODES:
        raise UserError(f"--mode must be one of {', '.join(MODES)}, got {mode!r}")


RERANK_BATCH_HELP = ("Pairs per LMM forward pass (default 4); on running out of GPU memory the batch is "
                     "halved and retried.")


def print_json(data) -> None:
    sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")


# -- index --------------------------------------------------------------------------------------
@app.command()
def index(
    folder: Path = typer.Argument(..., help="Folder of videos (searched recursively)."),
    indexer: List[str] = typer.Option([], "--indexer", "-i", help="Indexer name, name:weights, hub id or local "
                                      "folder; repeat for several. Default: what the index already uses, else "
                                      "dinov2 when its weights are available, else efficientnet-lite0."),
    index_dir: Optional[Path] = typer.Option(None, help="Where the index lives (default FOLDER/.convis)."),
    segment: Optional[str] = typer.Option(None, help="Split videos into fixed-length units, e.g. 10s or 1m."),
    captions: Optional[Path] = typer.Option(None, help="Folder of <video stem>.txt captions for the text indexer."),
    workers: Optional[int] = typer.Option(None, min=1, help="Decoder processes (default: half the cores)."),
    timeout: float = typer.Option(300.0, min=1, help="Seconds one file may take to decode before it is skipped."),
    publish_every: float = typer.Option(60.0, min=0, help="Seconds between snapshots a long run publishes, so "
                                        "queries made while it runs see its progress."),
    device: Optional[str] = typer.Option(None, help="torch device (default cuda when present, else cpu)."),
    trust_remote_code: bool = typer.Option(False, help="Allow checkpoints that ship their own code (internvideo)."),
    ray: Optional[str] = typer.Option(None, help="Decode and embed on Ray: 'auto' (the running cluster), "
                                      "HOST:PORT, or 'local' (start one here). Needs the ray extra."),
    faiss_index: Optional[str] = typer.Option(None, help="FAISS factory string for recall, e.g. 'HNSW32,Flat' or "
                                              "'IVF4096,Flat'; kept for later runs. Default 'auto': exact below "
                                              "100k vectors, IVF above."),
    faiss_params: Optional[str] = typer.Option(None, help="FAISS search parameters, e.g. 'nprobe=32' or "
                                               "'efSearch=128'; kept for later runs ('auto' resets)."),
    protocol: Optional[str] = typer.Option(None, help="How indexers see videos: 'fast' (default: about 1 frame "
                                           "a second, 8 a unit, decoder-scaled) or 'paper' (the ConViS-Bench "
                                           "reference's frames, pixels, weights and fp32). Kept in the index."),
    as_json: bool = typer.Option(False, "--json", help="Print the run summary as JSON."),
):
    """Index the videos in FOLDER: sample frames, embed them, store vectors (re-runs resume, skip unchanged files)."""
    with user_errors():
        if captions is not None and not captions.is_dir():
            raise UserError(f"captions folder not found: {captions}")
        settings = IndexSettings(segment_seconds=parse_duration(segment), captions=captions, workers=workers,
                                 timeout=timeout, publish_every=publish_every, ray_address=ray,
                                 faiss_index=faiss_index, faiss_params=faiss_params, protocol=protocol)
        engine = Engine(index_dir or folder / INDEX_DIRNAME, device=device, trust_remote_code=trust_remote_code)
        with _index_progress(disable=as_json) as progress:
            report = engine.index(folder, indexer, settings, progress=progress)
    for notice in engine.notices:
        err.print(f"[yellow]note:[/] {notice}", highlight=False)
    if as_json:
        print_json(report.as_dict())
    else:
        _print_index_report(report)
    if report.found and not report.indexed and not report.unchanged:
        raise typer.Exit(1)  # nothing usable came out of this folder


@contextmanager
def _index_progress(disable: bool):
    columns = [TextColumn("[bold]indexing"), BarColumn(), MofNCompleteColumn(), TextColumn("files"),
               TextColumn("{task.fields[frames]} frames"), TextColumn("{task.fields[rate]}"), TimeElapsedColumn(),
               TextColumn("{task.fields[current]}")]
    with Progress(*columns, console=err, disable=disable, transient=False) as bar:
        task = bar.add_task("index", total=None, frames=0, rate="", current="")

        def on_event(event: str, data: dict) -> None:
            if event == "start":
                bar.update(task, total=data["total"])
                return
            frames = bar.tasks[task].fields["frames"] + data["frames"]
            elapsed = bar.tasks[task].elapsed or 0
            rate = f"{frames / elapsed:.1f} frames/s" if elapsed > 0 else ""
            bar.update(task, advance=1, frames=frames, rate=rate, current=Path(data["path"]).name[:40])

        yield on_event


def _print_index_report(report) -> None:
    out.print(f"indexed {report.indexed} file(s), {report.units} unit(s), {report.frames} frames in "
              f"{report.seconds:.1f} s; unchanged {report.unchanged}; forgotten {report.forgotten}; "
              f"failed {len(report.failed)}" + (f"; captions {report.captioned}" if report.captioned else ""),
              highlight=False)
    out.print(f"indexers: {', '.join(report.indexers)}", highlight=False)
    if report.failed:
        table = Table(title="skipped files", title_justify="left")
        table.add_column("file", overflow="fold")
        table.add_column("reason", overflow="fold")
        for path, reason in report.failed:
            table.add_row(path, reason)
        out.print(table)


# -- query --------------------------------------------------------------------------------------
@app.command()
def query(
    anchor: Path = typer.Option(..., "--anchor", "-a", help="The video to find similar clips for (indexed or not)."),
    concept: List[str] = typer.Option(..., "--concept", "-c", help="Concept, optionally weighted: location, "
                                      "main-action=0.7, 'camera angle=2'. Repeat to combine (weights normalised)."),
    k: int = typer.Option(10, "-k", "--top", min=1, help="How many results."),
    index_dir: Optional[Path] = typer.Option(None, help="Index folder (default: the nearest .convis above the "
                                             "anchor or the current folder)."),
    start: Optional[str] = typer.Option(None, help="Use only the anchor from this time (e.g. 20s)."),
    end: Optional[str] = typer.Option(None, help="Use only the anchor up to this time (e.g. 40s)."),
    signal: List[str] = typer.Option([], help="Override the indexer used for a concept: CONCEPT=INDEXER."),
    reranker: Optional[str] = typer.Option(None, "--reranker", "-r", help="LMM that rescores the recalled "
                                           "candidates per concept (qwen2.5-vl, llava-onevision, llava-video, "
                                           "internvl, a hub id or a local folder)."),
    rerank_top: int = typer.Option(20, min=1, help="How many recalled candidates the reranker rescores."),
    mode: str = typer.Option("expected", help="Reranker scoring: expected (mean of P(1..5)) or greedy "
                             "(the paper's parsed single token)."),
    symmetric: bool = typer.Option(False, help="Score (a, b) and (b, a) and average them."),
    rerank_batch: Optional[int] = typer.Option(None, min=1, help=RERANK_BATCH_HELP),
    fusion: Optional[str] = typer.Option(None, help="Score each concept by a learned combination of every "
                                         "available signal: a weights file from `convis bench fusion`, or "
                                         "'default' for the weights shipped with convis."),
    device: Optional[str] = typer.Option(None, help="torch device (default cuda when present, else cpu)."),
    html: Optional[Path] = typer.Option(None, "--html", help="Also write a self-contained HTML gallery here."),
    as_json: bool = typer.Option(False, "--json", help="Print results as JSON."),
):
    """Rank indexed clips by similarity to ANCHOR in terms of one or more concepts."""
    with user_errors():
        concepts = concepts_to_score(concept, mode)
        engine = Engine(resolve_index_dir(index_dir, anchor), device=device, rerank_batch=rerank_batch)
        span = parse_duration(start, allow_zero=True), parse_duration(end)
        result = engine.query(anchor, concepts, k, *span, parse_overrides(signal), reranker=reranker,
                              rerank_top=rerank_top, mode=mode, symmetric=symmetric, fusion=fusion)
        if html is not None:
            page = write_query_html(result, engine.root, html, start=span[0], end=span[1])
            err.print(f"gallery: {page}", highlight=False)
    show(result, as_json, _print_hits)


def concepts_to_score(specs: List[str], mode: str) -> list[Concept]:
    """The concepts of a query or a comparison, once the reranker's scoring mode is known to be valid."""
    concepts = parse_concepts(specs)
    check_mode(mode)
    return concepts


def show(result: QueryResult | CompareResult, as_json: bool, as_table) -> None:
    """Notes on stderr, then the result as JSON or as ``as_table`` prints it."""
    print_notices(result.notices)
    if as_json:
        print_json(result.as_dict())
    else:
        as_table(result)


def print_notices(notices) -> None:
    for notice in notices:
        err.print(f"[yellow]note:[/] {notice}", highlight=False)


def _print_hits(result: QueryResult) -> None:
    weights = ", ".join(f"{c.key}={c.weight:.2f}" for c in result.concepts)
    table = Table(title=f"clips like {result.anchor}  ({weights})", title_justify="left")
    table.add_column("rank", justify="right")
    table.add_column("clip", no_wrap=True)
    table.add_column("time", justify="right", no_wrap=True)
    for c in result.concepts:
        table.add_column(c.key, justify="right")
    table.add_column("total", justify="right", style="bold")
    for hit in result.hits:
        table.add_row(str(hit.rank), hit.path, f"{hit.start:.1f}-{hit.end:.1f}s",
                      *[_score(hit.scores[c.key]) for c in result.concepts], _score(hit.total))
    out.print(table)
    signals = ", ".join(f"{c}: {m.split(':')[0]}" for c, m in result.signals.items())
    how = " + ".join(x for x in (result.reranker, result.fusion and f"fusion {result.fusion}") if x)
    out.print(f"[dim]scored by {how or 'recall similarity'} (recall: {signals})[/]", highlight=False)
    for hit in result.hits:
        for concept, parts in hit.contributions.items():
            terms = " ".join(f"{'+' if v >= 0 else '-'} {name} {abs(v):.2f}" for name, v in parts.items()
                             if name != "intercept")
            out.print(f"[dim]  {hit.rank}. {concept} = {parts['intercept']:.2f} {terms}[/]", highlight=False)


def _score(value) -> str:
    return "unreadable" if value is None else f"{value:.3f}"


# -- compare ------------------------------------------------------------------------------------
@app.command()
def compare(
    a: Path = typer.Argument(..., help="First video."),
    b: Path = typer.Argument(..., help="Second video."),
    concept: List[str] = typer.Option(..., "--concept", "-c", help="Concept(s), optionally weighted as in query."),
    reranker: str = typer.Option("qwen2.5-vl", "--reranker", "-r", help="LMM to ask (name, hub id or folder)."),
    mode: str = typer.Option("expected", help="expected (mean of P(1..5)) or greedy (parsed single token)."),
    symmetric: bool = typer.Option(False, help="Score (a, b) and (b, a) and average them."),
    rerank_batch: Optional[int] = typer.Option(None, min=1, help=RERANK_BATCH_HELP),
    index_dir: Optional[Path] = typer.Option(None, help="Keep the score cache in this index (default: the "
                                             "nearest .convis, else the user cache folder)."),
    device: Optional[str] = typer.Option(None, help="torch device (default cuda when present, else cpu)."),
    html: Optional[Path] = typer.Option(None, "--html", help="Also write a self-contained HTML page here."),
    as_json: bool = typer.Option(False, "--json", help="Print as JSON."),
):
    """How similar are A and B in terms of each concept (1 = completely different, 5 = perfectly similar)?"""
    with user_errors():
        engine = Engine(index_dir or find_index_dir(a.parent, Path.cwd()), device=device, rerank_batch=rerank_batch)
        result = engine.compare(a, b, concepts_to_score(concept, mode), reranker, mode, symmetric)
        if html is not None:
            err.print(f"page: {write_compare_html(result, a, b, html)}", highlight=False)
    show(result, as_json, _print_comparison)


def _print_comparison(result: CompareResult) -> None:
    table = Table(title=f"{result.a} vs {result.b}  ({result.reranker}, {result.mode})", title_justify="left")
    for col in ("concept", "weight", "score 1-5", "answer"):
        table.add_column(col)
    for row in result.concepts:
        table.add_row(row.concept.words, f"{row.concept.weight:.2f}", _score(row.score), row.raw)
    table.add_row("total", "", _score(result.total), "", style="bold")
    out.print(table)


# -- serve --------------------------------------------------------------------------------------
@app.command()
def serve(
    index_dir: Optional[Path] = typer.Option(None, help="Index folder (default: the nearest .convis)."),
    host: str = typer.Option("127.0.0.1", help="Address to listen on (localhost only by default)."),
    port: int = typer.Option(8000, min=1, max=65535, help="Port to listen on."),
    reranker: Optional[str] = typer.Option(None, "--reranker", "-r", help="LMM used when a request asks to "
                                           "rerank."),
):
    """Browse and query the index in a web browser; the JSON API is described at /openapi.json."""
    with user_errors():
        run_server(resolve_index_dir(index_dir, Path.cwd()), host, port, reranker)


# -- info ---------------------------------------------------------------------------------------
@app.command()
def info(
    index_dir: Optional[Path] = typer.Option(None, help="Index folder (default: the nearest .convis)."),
    as_json: bool = typer.Option(False, "--json", help="Print as JSON."),
):
    """Show what is indexed, by which indexers, and what failed."""
    with user_errors():
        summary = Engine(resolve_index_dir(index_dir, Path.cwd())).info()
    if as_json:
        print_json(summary)
        return
    out.print(f"index {summary['index_dir']} of {summary['root']} (protocol {summary['protocol']})", highlight=False)
    out.print(f"files ok {summary['files_ok']}, failed {summary['files_failed']}, units {summary['units']}",
              highlight=False)
    for row in summary["indexers"]:
        count = summary["vectors"].get(row["indexer"], 0)
        out.print(f"  {row['indexer']}  {row['kind']}  dim {row['dim']}  {count} vectors  faiss {row['faiss']}",
                  highlight=False)
    for failure in summary["failures"]:
        out.print(f"  [red]failed[/] {failure['path']}: {failure['error']}", highlight=False)


@app.command()
def models(
    protocol: str = typer.Option("fast", help="Show the indexers as this protocol builds them: fast or paper."),
    as_json: bool = typer.Option(False, "--json", help="Print as JSON."),
):
    """List the registered indexers and rerankers: default weights, and what each is fed (frames, decode size,
    pooling, precision), before anything is downloaded."""
    with user_errors():
        if protocol not in PROTOCOLS:
            raise UserError(f"--protocol is one of {', '.join(PROTOCOLS)}, got {protocol!r}")
    rows = [{"kind": "indexer", "name": n, "default": INDEXERS.entry(n).source_for(protocol),
             "description": INDEXERS.entry(n).description, **INDEXERS.entry(n).card.get(protocol, {})}
            for n in available_indexers()]
    rows += _reranker_rows()
    if as_json:
        print_json(rows)
        return
    table = Table()
    columns = ("kind", "name", "default", "frames", "size", "pooling", "dtype")
    for col in columns:
        table.add_column(col, overflow="fold")
    for row in rows:
        table.add_row(*(str(row.get(c, "")) for c in columns))
    out.print(table)


def _reranker_rows() -> list[dict]:
    return [{"kind": "reranker", "name": n, "default": RERANKERS.entry(n).default_source,
             "description": RERANKERS.entry(n).description, **RERANKERS.entry(n).card} for n in available_rerankers()]


app.add_typer(bench_app, name="bench", help="Reproduce ConViS-Bench metrics and measure convis on them.")


def main() -> None:
    app()


if __name__ == "__main__":
    main()
