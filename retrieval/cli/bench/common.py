"""What the bench commands share: their common options, and bad input as one line on stderr."""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Iterator, Optional

import typer

from bench.loaders import SIMILARITIES_SUFFIX
from retrieval.cli.console import fail

GtPairsOpt = Annotated[Path, typer.Option("--gt", help="Human ratings: gt_conditioned_similarities.json.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print the results as JSON instead of tables.")]
SimilaritiesOpt = Annotated[Optional[list[Path]], typer.Option(
    "--similarities", "-s", help=f"Pair-score file, or folder searched for *{SIMILARITIES_SUFFIX}.")]
MorePaths = Annotated[Optional[list[Path]], typer.Argument(help="More score files or folders.", show_default=False)]


@contextmanager
def user_errors(*more: type[BaseException]) -> Iterator[None]:
    """Any ConvisError (bad input, a missing model, a busy index), an OSError and the ``more`` kinds of error
    become one line on stderr and exit code 2, not a traceback."""
    try:
        yield
    except Exception as e:
        from retrieval.engine import ConvisError  # on failure only: the bench commands' help imports no engine

        if isinstance(e, (ConvisError, OSError, *more)):
            fail(str(e))
        raise
