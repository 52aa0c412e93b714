"""``convis dupes``: the index's near-duplicates in groups, with a keep/drop list (``Engine.dupes`` does it)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from retrieval.cli import present
from retrieval.cli.console import printable
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

AutoOpt = Annotated[bool, typer.Option("--auto", help="Read the threshold from the index's background (what "
                                       "unrelated units score, as query confidence does) and say which it chose; "
                                       "the default without --threshold.")]
PageOpt = Annotated[Optional[Path], typer.Option("--html", metavar="FILE", help="Also write an HTML page of the "
                                                 "groups side by side, a strip of frames a member.")]


def dupes(folder: WhereArg = None, index_dir: IndexDirOpt = None, level: LevelOpt = "file",
          threshold: ThresholdOpt = None, auto: AutoOpt = False, indexer: DupesIndexerOpt = None,
          filters: FilterOpt = None, keep: KeepOpt = "longest", html: PageOpt = None, as_json: JsonOpt = False):
    """Find near-duplicate files (re-encodes, rescales, crops, small overlays, trimmed copies) or units: pairs
    within a similarity (FAISS range search) joined into groups, one member of each to keep, and the rest as a
    drop list (`--json` holds it as "drop"; `convis remove --from-file` takes it)."""
    from retrieval.engine import DupesRequest, Engine

    if auto and threshold is not None:
        raise UserError("--auto reads the threshold from the index and --threshold gives it: use one of them")
    engine = Engine(resolve_index_dir(index_dir or folder))
    result = engine.dupes(DupesRequest(level, threshold, indexer, filters or (), keep))
    if html is not None:
        from retrieval.cli.dupes_page import write_page

        present.page_written("duplicates", write_page(result, html))
    present.print_notices(result.notices)
    if as_json:
        present.print_json(result.as_dict())
    else:
        print_groups(result)


def print_groups(result) -> None:
    """Each group, keeper first, with similarities and times; then the threshold and the drop list."""
    said = "chosen by --auto from the index's background" if result.chosen == "auto" else "given"
    present.out.print(f"{len(result.groups)} group(s) of near-duplicate {result.level}s by {result.signal}, "
                      f"threshold {result.threshold:.4f} ({said})", highlight=False, markup=False)
    for number, group in enumerate(result.groups, 1):
        present.out.print(f"group {number}: {len(group.members)} {result.level}s, similarity >= "
                          f"{group.similarity:.4f}", highlight=False, markup=False)
        for m in sorted(group.members, key=lambda m: not m.keep):
            present.out.print(f"  {'keep' if m.keep else 'drop'}  {printable(m.path)}  "
                              f"{m.start:.1f}-{m.end:.1f} s  {m.similarity:.4f}", highlight=False, markup=False)
    if result.drop:
        present.out.print(f"drop list ({len(result.drop)}): save with --json, then `convis remove --from-file`",
                          highlight=False, markup=False)
