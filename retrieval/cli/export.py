"""``convis export``: an index's files, units, descriptions and vectors, or a query's results, as columnar files."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from retrieval.cli.options import IndexDirOpt, UserError, WhereArg, resolve_index_dir
from retrieval.cli.present.common import print_notices
from retrieval.cli.present.listing import print_export

OutOpt = Annotated[Path, typer.Option("--out", "-o", metavar="DIR", help="The folder to write to (made when "
                                      "missing; one that holds anything needs --force).")]
FormatOpt = Annotated[str, typer.Option("--format", "-f", metavar="parquet|jsonl", help="parquet, or jsonl (one JSON "
                                        "object a line).")]
ResultsOpt = Annotated[Optional[Path], typer.Option(
    "--results", metavar="FILE", help="Instead of an index, the hits of a `convis query --json` or `convis search "
    "--json` output written to FILE: one row a hit.")]
ForceOpt = Annotated[bool, typer.Option("--force", help="Write into a folder that is not empty (files of the same "
                                        "name are replaced).")]
ManifestJsonOpt = Annotated[bool, typer.Option("--json", help="Print the manifest as JSON.")]


def export(out: OutOpt, folder: WhereArg = None, fmt: FormatOpt = "parquet", results: ResultsOpt = None,
           index_dir: IndexDirOpt = None, force: ForceOpt = False, as_json: ManifestJsonOpt = False):
    """Write an index's files, units, descriptions, timed text lines and each signal's vectors as parquet or JSONL
    files any tool reads, with a manifest.json (tables, row counts, the index and its generation); the index is only
    read, also while an index run or the server holds it. With --results: a query's or a search's hits instead."""
    from retrieval.api import Engine, export_results

    notices: list[str] = []
    if results is not None:
        if folder is not None or index_dir is not None:
            raise UserError("--results exports a results file, not an index: give FOLDER/--index-dir or --results")
        manifest = export_results(results, out, fmt, force)
    else:
        manifest = Engine(resolve_index_dir(index_dir or folder)).export(out, fmt, force, notices)
    print_notices(notices)
    print_export(manifest, out, as_json)
