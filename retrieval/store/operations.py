"""What a user changes in an index besides indexing it: taking files out (``remove``), undoing that (``restore``),
and the user fields of files (``tag``, ``read_metadata``).

Each opens the catalog as its writer (CatalogBusy while an index run holds it), names the files as the catalog does
(relative to the root), refuses paths the index does not hold as it must before anything changes, commits, and
publishes what is derived from the catalog when the units searched changed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from retrieval.store.catalog.removed import Undone
from retrieval.store.index_dir import check_removable, check_restorable, relative, writing
from retrieval.store.publish import publish
from retrieval.store.user_fields import apply_metadata, parse_assignments


def remove(index_dir: Path, paths: Sequence[str | Path]) -> list[str]:
    """Take indexed files out of the index (rows and vectors kept aside; the files stay on disk), so later runs skip
    them; their root-relative paths, or NotIndexedError naming those the index does not list (nothing removed)."""
    with writing(index_dir) as catalog:
        rels = relative(catalog, index_dir, paths)
        check_removable(catalog, rels)
        catalog.exclude(rels)
        publish(catalog, index_dir)  # nothing derived may recall the removed units
    return rels


def restore(index_dir: Path, paths: Sequence[str | Path]) -> Undone:
    """Undo ``remove``: kept rows and vectors are back, searchable at once (a file removed before rows were kept is
    indexed by the next run); or NotIndexedError naming those that were not removed (nothing changes)."""
    with writing(index_dir) as catalog:
        rels = relative(catalog, index_dir, paths)
        check_restorable(catalog, rels)
        done = catalog.restore(rels)
        if done.restored:  # one commit moved them back; what is derived follows, as after a remove
            publish(catalog, index_dir)
    return done


def tag(index_dir: Path, paths: Sequence[str | Path], assignments: Sequence[str] = (),
        unset: Sequence[str] = ()) -> list[str]:
    """Set (``assignments``: ``key=value``) and remove (``unset``: names) user fields of indexed files; their
    root-relative paths, or NotIndexedError naming those the index does not list (nothing changes)."""
    values, names = parse_assignments(assignments, unset)
    with writing(index_dir) as catalog:
        rels = relative(catalog, index_dir, paths)
        check_removable(catalog, rels)
        catalog.tag(rels, values, names)
    return rels


def read_metadata(index_dir: Path, file: Path | None, notices: list[str]) -> int | None:
    """Read the user fields of ``file`` (None: the file an earlier run read, if it changed since); how many files
    have fields from it (None: nothing read).  Each kind of problem in it is one line of ``notices``."""
    with writing(index_dir) as catalog:
        return apply_metadata(catalog, file, notices)
