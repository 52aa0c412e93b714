"""What every `bench` command shares with the user: one-line errors, notes on stderr, common options."""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Iterator, NoReturn, Optional

import typer

from bench.loaders import SIMILARITIES_SUFFIX, BenchDataError
from retrieval.core.errors import one_line

GtPairsOpt = Annotated[Path, typer.Option("--gt", help="Human ratings: gt_conditioned_similarities.json.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print the results as JSON instead of tables.")]
SimilaritiesOpt = Annotated[Optional[list[Path]], typer.Option(
    "--similarities", "-s", help=f"Pair-score file, or folder searched for *{SIMILARITIES_SUFFIX}.")]
MorePaths = Annotated[Optional[list[Path]], typer.Argument(help="More score files or folders.", show_default=False)]


def fail(message: str) -> NoReturn:
    """``message`` as one line on stderr (library errors can span lines), exit code 2."""
    typer.echo(f"error: {one_line(RuntimeError(message), None)}", err=True)
    raise typer.Exit(code=2)


def note(message: str) -> None:
    typer.echo(message, err=True)  # stderr, so --json output on stdout stays parseable


@contextmanager
def user_errors(*more: type[BaseException]) -> Iterator[None]:
    """Bad input (and the ``more`` kinds of error) becomes one line on stderr and exit code 2, not a traceback."""
    try:
        yield
    except (BenchDataError, OSError, *more) as e:
        fail(str(e))
