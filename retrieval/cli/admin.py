"""Looking after an index: ``info``, ``repair``, ``remove``, ``ls``; and ``models``, what convis can run."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, List, Optional

import typer

from retrieval.cli.options import IndexDirOpt, JsonOpt, RemoveIndexDirOpt, UserError, WhereArg, resolve_index_dir
from retrieval.cli.present.common import print_notices
from retrieval.cli.present.listing import print_info, print_listing, print_removed, print_removed_listing, print_repair
from retrieval.cli.present.models import model_rows, print_models


def info(folder: WhereArg = None, index_dir: IndexDirOpt = None, as_json: JsonOpt = False):
    """Show what is indexed, by which indexers, and what failed."""
    from retrieval.api import Engine

    notices: list[str] = []
    summary = Engine(resolve_index_dir(index_dir or folder)).info(notices)
    print_notices(notices)  # e.g. a damaged catalog read from its snapshot
    print_info(summary, as_json)


def repair(folder: WhereArg = None, index_dir: IndexDirOpt = None, as_json: JsonOpt = False):
    """Restore a damaged catalog from the index's last snapshot (the damaged file is kept aside, renamed)."""
    from retrieval.api import Engine

    where = resolve_index_dir(index_dir or folder)
    print_repair(where, Engine(where).repair(), as_json)


FilesArg = Annotated[Optional[List[Path]], typer.Argument(metavar="FILE", help="Indexed files: paths as you see "
                                                          "them, or relative to the indexed folder.",
                                                          show_default=False)]
FromFileOpt = Annotated[Optional[Path], typer.Option("--from-file", metavar="LIST", help="Also the files LIST names: "
                                                     "one path a line, relative to the indexed folder (blank lines and "
                                                     "# comments skipped), or the JSON `convis dupes --json` prints "
                                                     "(its drop list).")]
UndoOpt = Annotated[bool, typer.Option("--undo", help="Put removed files back: their stored vectors are searchable at "
                                       "once, nothing is embedded again.")]


def remove(files: FilesArg = None, index_dir: RemoveIndexDirOpt = None, undo: UndoOpt = False,
           from_file: FromFileOpt = None, as_json: JsonOpt = False):
    """Take files out of the index: no search, listing or count shows them, and later `convis index` runs skip them
    (they stay removed until undone); the files stay on disk and their vectors are kept, so --undo puts them back
    searchable at once. `convis ls --removed` lists them."""
    from retrieval.api import Engine
    from retrieval.cli.drop_list import read_drop_list

    files = list(files or [])
    listed = read_drop_list(from_file) if from_file is not None else []
    if not files and not listed:
        raise UserError("name the files to remove, or --from-file LIST" if from_file is None else
                        f"{from_file} lists no file to remove")
    engine = Engine(resolve_index_dir(index_dir, *files))
    # a file that exists here is named by where it is (a symlink as itself, not its target); any other path is
    # taken relative to the indexed folder, as a list's paths are
    named = [Path(os.path.abspath(f)) if os.path.lexists(f) else f for f in files] + listed
    print_removed(engine.unremove(named) if undo else engine.remove(named), undo, as_json)


FailedOpt = Annotated[bool, typer.Option("--failed", help="Only the files that could not be indexed.")]
RemovedOpt = Annotated[bool, typer.Option("--removed", help="The files taken out of the index (`convis remove`) "
                                          "instead, with when; `convis remove --undo FILE` puts one back.")]


def list_files(folder: WhereArg = None, index_dir: IndexDirOpt = None, failed: FailedOpt = False,
               removed: RemovedOpt = False, as_json: JsonOpt = False):
    """List the indexed files: duration, units, status (with the reason a file failed; unavailable: its folder is
    missing or not mounted, its vectors kept), caption; --removed: the removed files instead."""
    from retrieval.api import Engine

    if failed and removed:
        raise UserError("--failed and --removed list different files: give one of them")
    engine, notices = Engine(resolve_index_dir(index_dir or folder)), []
    if removed:
        listing = engine.removed(notices)
        print_notices(notices)
        print_removed_listing(engine.root, listing, as_json)
        return
    files = [f for f in engine.files(notices) if not failed or f.status == "failed"]
    print_notices(notices)
    print_listing(engine.root, files, as_json)


ProtocolOpt = Annotated[str, typer.Option(metavar="fast|paper", help="Show the indexers as this protocol builds "
                                          "them.")]
FullOpt = Annotated[bool, typer.Option("--full", help="Also show what each model is fed: frames, decode size, "
                                       "pooling, precision; and where it captions (the vLLM releases supported).")]
CompleteJsonOpt = Annotated[bool, typer.Option("--json", help="Print as JSON (always complete).")]


def models(protocol: ProtocolOpt = "fast", full: FullOpt = False, as_json: CompleteJsonOpt = False):
    """List the registered indexers, rerankers and pair signals: default weights, and what each is fed (frames,
    decode size, pooling, precision), before anything is downloaded."""
    print_models(model_rows(protocol), full, as_json)
