"""``convis dupes``: the index's near-duplicates in groups, with a keep/drop list (``Engine.dupes`` does it)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Annotated, Optional

import typer

from retrieval.cli.options import (
    DupesIndexerOpt,
    FilterOpt,
    IndexDirOpt,
    JsonOpt,
    KeepOpt,
    LevelOpt,
    ThresholdOpt,
    UserError,
    WhereArg,
    resolve_index_dir,
)
from retrieval.cli.present.common import page_written, print_json, print_notices
from retrieval.cli.present.dupes import print_groups

AutoOpt = Annotated[bool, typer.Option("--auto", help="Read the threshold from the index's background (what "
                                       "unrelated units score, as query confidence does) and say which it chose; "
                                       "the default without --threshold.")]
DropOpt = Annotated[bool, typer.Option("--drop", help="Propose a drop list even when a semantic embedding grouped "
                                       "the clips (alike footage, not only copies); a fingerprint's groups always "
                                       "have one.")]
PageOpt = Annotated[Optional[Path], typer.Option("--html", metavar="FILE", help="Also write an HTML page of the "
                                                 "groups side by side, a strip of frames a member.")]


def dupes(folder: WhereArg = None, index_dir: IndexDirOpt = None, level: LevelOpt = "file",
          threshold: ThresholdOpt = None, auto: AutoOpt = False, indexer: DupesIndexerOpt = None,
          filters: FilterOpt = None, keep: KeepOpt = "longest", drop: DropOpt = False, html: PageOpt = None,
          as_json: JsonOpt = False):
    """Find near-duplicate files (re-encodes, rescales, crops, small overlays, trimmed copies) or units: pairs
    within a similarity (FAISS range search) joined into groups, one member of each to keep, and the rest as a
    drop list (`--json` holds it as "drop"; `convis remove --from-file` takes it). Grouped by a semantic
    embedding (no fingerprint indexed), the groups come without a drop list unless --drop asks for one."""
    from retrieval.api import DupesRequest, Engine

    if auto and threshold is not None:
        raise UserError("--auto reads the threshold from the index and --threshold gives it: use one of them")
    engine = Engine(resolve_index_dir(index_dir or folder))
    result = replace(engine.dupes(DupesRequest(level, threshold, indexer, filters or (), keep)), drop_asked=drop)
    if html is not None:
        from retrieval.cli.dupes_page import write_page

        page_written("duplicates", write_page(result, html))
    print_notices(result.notices)
    if as_json:
        print_json(result.as_dict())
    else:
        print_groups(result)

