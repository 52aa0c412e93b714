"""What the bench commands share: their common options, and bad input as one line on stderr with its exit code."""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Iterator, Optional

import typer

from bench.loaders import SIMILARITIES_SUFFIX
from retrieval.api import ConvisError, one_line
from retrieval.cli.console import fail, fail_with

GtPairsOpt = Annotated[Path, typer.Option("--gt", help="Human ratings: gt_conditioned_similarities.json.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print the results as JSON instead of tables.")]
SimilaritiesOpt = Annotated[Optional[list[Path]], typer.Option(
    "--similarities", "-s", help=f"Pair-score file, or folder searched for *{SIMILARITIES_SUFFIX}.")]
MorePaths = Annotated[Optional[list[Path]], typer.Argument(help="More score files or folders.", show_default=False)]


@contextmanager
def user_errors(*more: type[BaseException]) -> Iterator[None]:
    """Any ConvisError (bad input, a missing model, a busy index) becomes its one line on stderr and its exit code,
    as in the main CLI; an OSError and the ``more`` kinds of error one line and exit code 2; not a traceback."""
    try:
        yield
    except ConvisError as e:
        fail_with(e)
    except (OSError, *more) as e:
        fail(one_line(e, None))
