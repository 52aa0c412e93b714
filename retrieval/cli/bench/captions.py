"""`convis bench captions`: embed caption sets, write their pair scores in the release format, and print their
correlation with the human ratings (the SBERT rows of the paper's Table 3), side by side.

Mounted with ``register(app)`` on the bench typer app.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from bench.loaders import SIMILARITIES_SUFFIX
from retrieval.cli.bench.common import JsonOpt, user_errors
from retrieval.cli.console import PlainUsage, note

if TYPE_CHECKING:
    from bench.evaluate import CorrelationRow

HELP = ("Embed captions, write pair scores (cos+1)/2, and print their correlation (paper Table 3, SBERT rows); "
        "repeat --captions to compare caption sets side by side.")


def register(app: typer.Typer) -> None:
    """Add the `captions` command to a typer app (the `bench` sub-app)."""
    app.command("captions", help=HELP, cls=PlainUsage)(captions)


def captions(
    captions_dirs: Annotated[list[Path], typer.Option(
        "--captions", help="Folder of <video stem>.txt captions; repeat for several caption sets.")],
    pairs: Annotated[Path, typer.Option("--pairs", help="Human ratings: gt_conditioned_similarities.json.")],
    out: Annotated[Path, typer.Option("--out", help="Where to write the pair similarities (release format): a "
                                      ".json file for one caption set, else a folder, filled as "
                                      f"OUT/<set>/<set>{SIMILARITIES_SUFFIX}.")],
    model: Annotated[
        str, typer.Option("--model", help="Text indexer spec: text, a sentence-transformers id or folder.")
    ] = "text",
    device: Annotated[Optional[str], typer.Option("--device", help="torch device, e.g. cpu or cuda.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Score every caption set against the human ratings and report them side by side."""
    from bench.captions import score_caption_sets  # SciPy and the text models: only when scoring, never for --help

    with user_errors():
        rows = score_caption_sets(captions_dirs, pairs, out, model, device, note)
        _emit(rows, as_json, pairs)


def _emit(rows: list[CorrelationRow], as_json: bool, pairs: Path) -> None:
    from rich.console import Console
    from rich.measure import Measurement

    from bench import report

    if as_json:
        typer.echo(report.to_json({"gt": str(pairs), "results": report.records(rows)}))
        return
    console = Console()
    tables = report.correlation_tables(rows, side_by_side=True)
    if not console.is_terminal:
        # piped output has no screen to fit: keep each concept on one line rather than fold the numbers
        unbounded = console.options.update_width(10_000)
        console.width = max(console.width, *(Measurement.get(console, unbounded, t).maximum for t in tables))
    for table in tables:
        console.print(table)
