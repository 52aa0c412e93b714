"""The keyword index kept in step with the catalog: rebuilt when a run changed the texts, and checked when read.

Runs that change what units say (index, describe, remove, restore) call ``refresh`` as they publish what is derived
from the catalog (``retrieval.store.publish``). A search calls ``current``: a saved index whose stamp is not the
catalog's, or written by another tokeniser (a run stopped early, an older convis, a damaged or missing folder), is
rebuilt from the catalog in memory, saved when the folder can be written, and said in a notice; the search goes on
either way.
"""

from __future__ import annotations

from pathlib import Path

from retrieval.core.errors import one_line
from retrieval.store.catalog import Catalog
from retrieval.store.keyword.index import KEYWORD_DIR, KeywordIndex, OlderFormat
from retrieval.store.keyword.unit_texts import stamp

_UNREADABLE = (OSError, EOFError, ValueError, KeyError, TypeError)  # a damaged saved copy, on load


def _saved(index_dir: Path) -> tuple[KeywordIndex | None, str | None]:
    """The saved index, or None and why it cannot be used."""
    if not (index_dir / KEYWORD_DIR).exists():
        return None, "missing"
    try:
        return KeywordIndex.load(index_dir), None
    except OlderFormat:
        return None, "of an older format (a changed tokeniser)"
    except _UNREADABLE as exc:
        return None, f"unreadable ({one_line(exc, 120)})"


def refresh(catalog: Catalog, index_dir: Path) -> None:
    """Rebuild and save the keyword index unless the saved one is of the catalog's texts as they are."""
    saved, _ = _saved(index_dir)
    if saved is not None and saved.stamp == stamp(catalog):
        return
    try:
        KeywordIndex.build(catalog).save(index_dir)
    except OSError:
        pass  # the next search rebuilds it, and says so


def current(catalog: Catalog, index_dir: Path, notices: list[str]) -> KeywordIndex:
    """The keyword index of the catalog's texts as they are: the saved one, else one rebuilt now (noticed)."""
    saved, why = _saved(index_dir)
    if saved is not None and saved.stamp == stamp(catalog):
        return saved
    fresh = KeywordIndex.build(catalog)
    try:
        fresh.save(index_dir)
    except OSError as exc:
        notices.append(f"keyword index {why or 'out of date'}: rebuilt for this search, not saved "
                       f"({one_line(exc, 120)})")
    else:
        notices.append(f"keyword index {why or 'out of date'}: rebuilt from the catalog")
    return fresh
