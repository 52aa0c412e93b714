"""`convis bench text-search`: R@1 and MRR of vector, keyword and hybrid text search on the bundled queries over
the example clips' captions (bench/text_search.py).

Mounted with ``register(app)`` on the bench typer app.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Optional

import typer

from retrieval.cli.bench.common import JsonOpt, user_errors
from retrieval.cli.console import PlainUsage, note

HELP = ("R@1 and MRR (x100) of vector, keyword and hybrid text search on written queries (paraphrases, rare "
        "terms, one-word queries, misspellings) over the example clips' captions; indexes the examples first "
        "unless --index-dir names an index of them.")


def register(app: typer.Typer) -> None:
    """Add the `text-search` command to a typer app (the `bench` sub-app)."""
    app.command("text-search", help=HELP, cls=PlainUsage)(text_search)


def text_search(
    index_dir: Annotated[Optional[Path], typer.Option(
        "--index-dir", help="An index of examples/videos with examples/captions (as `make demo` builds it); "
        "default: build one in a temporary folder.")] = None,
    queries: Annotated[Optional[Path], typer.Option(
        "--queries", help="Query file (default: bench/data/text_search.json).")] = None,
    limit: Annotated[Optional[int], typer.Option(
        "--limit", min=1, help="Only the first N queries of each kind (a quick look).")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Rank every query in each mode and print R@1 and MRR per mode, overall and per query kind."""
    from bench import text_search as bench  # the engine and its models: only when running, never for --help

    with user_errors():
        result = bench.run(index_dir, queries or bench.QUERIES, limit, note)
    if as_json:
        typer.echo(json.dumps(result, indent=2))
        return
    typer.echo(f"text search, {result['queries']} queries: R@1 and MRR (x100)")
    for line in bench.table_lines(result):
        typer.echo(line)
