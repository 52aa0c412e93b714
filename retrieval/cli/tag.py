"""``convis tag``: set or remove user fields of indexed files, which ``--where`` filters read."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, List

import typer

from retrieval.cli.console import out, printable
from retrieval.cli.options import JsonOpt, RemoveIndexDirOpt, resolve_index_dir
from retrieval.cli.present.common import print_json

TagFilesArg = Annotated[List[Path], typer.Argument(metavar="FILE", help="Indexed files: paths as you see them, or "
                                                   "relative to the indexed folder.")]
SetOpt = Annotated[List[str], typer.Option("--set", metavar="KEY=VALUE", help="Give each file this field (repeatable): "
                                           "a number where the value reads as one (rating=4), else text; a list "
                                           "as comma-separated items (tags=goal,corner, matched by 'tags has goal').",
                                           show_default=False)]
UnsetOpt = Annotated[List[str], typer.Option("--unset", metavar="KEY", help="Remove this field from each file "
                                             "(repeatable).", show_default=False)]


def tag(files: TagFilesArg, set_: SetOpt = None, unset: UnsetOpt = None, index_dir: RemoveIndexDirOpt = None,
        as_json: JsonOpt = False):
    """Set (--set KEY=VALUE) or remove (--unset KEY) user fields of indexed files, for --where filters on query,
    search and the web app; `convis ls --json` shows them. No vector changes."""
    from retrieval.api import Engine

    engine = Engine(resolve_index_dir(index_dir, *files))
    named = [Path(os.path.abspath(f)) if os.path.lexists(f) else f for f in files]
    tagged = engine.tag(named, set_ or [], unset or [])
    if as_json:
        print_json({"tagged": tagged, "set": list(set_ or []), "unset": list(unset or [])})
        return
    changes = ", ".join([*(set_ or []), *(f"-{name}" for name in unset or [])])
    out.print(f"tagged {len(tagged)} file(s): {printable(', '.join(tagged))} ({changes})",
                      highlight=False, markup=False)
