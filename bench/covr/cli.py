"""`convis bench covr`: score a TF-CoVR ranking with the benchmark's own metric (mAP@K, Recall@K).

Mounted with ``register(app)`` on the bench typer app. ``covr`` is a command group that runs the scoring itself
when no sub-command is named, so ``convis bench covr --gt A.csv --scores R.json`` works and a later
``convis bench covr run`` (producing the ranking with convis) can be added with ``@covr_app.command("run")``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Optional

import typer

from bench.console import JsonOpt, fail, note, user_errors

HELP = ("Score a TF-CoVR ranking (query_id -> video ids, best first) against its annotation CSV: mAP@5/10/25/50 "
        "and Recall@K as the benchmark's code computes them (the query's own video is never counted).")

covr_app = typer.Typer(
    name="covr",
    help=HELP,
    invoke_without_command=True,
    add_completion=False,
    subcommand_metavar="",  # no sub-commands yet; "[COMMAND]" once `run` exists
)


@covr_app.callback()
def covr(
    ctx: typer.Context,
    gt: Annotated[Optional[Path], typer.Option(
        "--gt", metavar="ANNOTATIONS.csv", help="TF-CoVR annotation CSV (query_id, query_video, target_video, "
        "target_videos_ids, modification).")] = None,
    scores: Annotated[Optional[Path], typer.Option(
        "--scores", "-s", metavar="RANKING.json", help="Ranking JSON: {query_id: [video ids, best first]}.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Score a ranking file against TF-CoVR annotations."""
    if ctx.invoked_subcommand is not None:  # a future sub-command (`run`) takes over
        return
    if gt is None or scores is None:
        fail("give --gt ANNOTATIONS.csv and --scores RANKING.json")
    from bench.covr.metrics import covr_metrics, read_annotations, read_ranking  # numpy, only when scoring

    with user_errors():
        result = covr_metrics(read_annotations(gt), read_ranking(scores))
    if result["missing"]:
        shown = ", ".join(result["missing"][:5]) + (", ..." if len(result["missing"]) > 5 else "")
        note(f"{len(result['missing'])} of {result['queries']} queries are not in {scores} and count as misses: "
             f"{shown}")
    if result["repeated_ids"]:
        note(f"{result['repeated_ids']} rankings repeat a video id; every copy counts, as in TF-CoVR's code")
    if as_json:
        typer.echo(json.dumps({"gt": str(gt), "scores": str(scores), **result}, indent=2))
    else:
        _print_table(result)


def _print_table(result: dict) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title="TF-CoVR")
    table.add_column("metric")
    table.add_column("value", justify="right")
    for key, value in result.items():
        if key.startswith(("mAP@", "Recall@")):
            table.add_row(key, f"{value:.2f}")
    table.add_row("queries ranked", f"{result['ranked']} of {result['queries']}")
    Console().print(table)


def register(app: typer.Typer) -> None:
    """Add the `covr` command group to a typer app (the `bench` sub-app)."""
    app.add_typer(covr_app, name="covr")
