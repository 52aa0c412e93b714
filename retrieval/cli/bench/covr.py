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

from retrieval.cli.bench.common import JsonOpt, user_errors
from retrieval.cli.console import fail, note

HELP = ("Score a TF-CoVR ranking (query_id -> video ids, best first) against its annotation CSV: mAP@5/10/25/50 "
        "and Recall@K as the benchmark's code computes them (the query's own video is never counted).")

covr_app = typer.Typer(
    name="covr",
    help=HELP,
    invoke_without_command=True,
    add_completion=False,
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


@covr_app.command("run")
def run(
    dataset: Annotated[Path, typer.Option("--dataset", metavar="DIR", help="A folder laid out like TF-CoVR's "
                                          "release: one annotation CSV, the videos (<id>.mp4) in videos/ or beside "
                                          "it.")],
    index_dir: Annotated[Optional[Path], typer.Option(metavar="DIR", help="Where the index and ranking.json go "
                                                      "(default DATASET/.convis-covr).")] = None,
    indexer: Annotated[Optional[list[str]], typer.Option("--indexer", "-i", help="Indexers (default: convis "
                                                         "index's); a change needs one that reads text: clip, "
                                                         "or text with --captions.")] = None,
    captions: Annotated[Optional[Path], typer.Option(metavar="DIR", help="<id>.txt captions for the text "
                                                     "indexer.")] = None,
    change_weight: Annotated[float, typer.Option(min=0.0, help="How much matching the modification counts "
                                                 "against staying like the query video.")] = 1.0,
    as_json: JsonOpt = False,
) -> None:
    """Run convis on a TF-CoVR-shaped folder: index it, one composed query a row (query video + modification,
    cleaned as TF-CoVR cleans it) over TF-CoVR's gallery (the target_video column, one entry a row, repeats kept),
    write the ranking (query_id -> top-50 entries' video ids) and score it as `convis bench covr` does."""
    from bench.covr.run import CovrRun, run_covr

    with user_errors():
        result = run_covr(CovrRun(dataset, index_dir or dataset / ".convis-covr", tuple(indexer or ()), captions,
                                  change_weight), progress=note)
    note(f"ranking written to {result['ranking']}")
    if as_json:
        typer.echo(json.dumps(result, indent=2))
    else:
        _print_table(result)


def register(app: typer.Typer) -> None:
    """Add the `covr` command group to a typer app (the `bench` sub-app)."""
    app.add_typer(covr_app, name="covr")
