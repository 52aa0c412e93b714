"""An index folder (``.convis``): finding it, opening its catalog to read, and what it holds.

Readers open the catalog read-only: its published snapshot when that is current (readers then never hold
the catalog file, which would keep an index run out), else the file itself, briefly; while an index run
holds it, or when it is damaged, the last snapshot, with a notice.  Notices are returned to the caller,
which gives them to its user with its answer.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Sequence

from retrieval.core.defaults import INDEX_DIRNAME
from retrieval.core.errors import ConvisError, some
from retrieval.core.segmentation import describe as describe_units
from retrieval.core.segmentation import from_label, segmentation_label
from retrieval.store.catalog import Catalog, FileListing, list_files
from retrieval.store.catalog.removed import RemovedFile
from retrieval.store.errors import CatalogBusy, CatalogDamaged, CatalogEmpty
from retrieval.store.repair import Restored, restore_snapshot
from retrieval.store.snapshots import CATALOG_NAME, SNAPSHOT_NAME, clock, snapshot_is_current, writer_pid
from retrieval.store.vectors import signals as signal_vectors
from retrieval.store.vectors.store_setting import store_of

PROTOCOL = "protocol"  # the catalog setting: how the index's models embed ("fast" unless set)
WRITTEN_IN = "written_in"  # catalog setting: the index folder (resolved) its last index run wrote it in
CAPTIONER = "captioner"  # catalog setting: the last --captioner spec (`convis describe`'s default, a change's editor)


class NoIndexError(ConvisError, FileNotFoundError):
    """No index where one was expected."""

    exit_code, http_status = 2, 503


class NotIndexedError(ConvisError, LookupError):
    """Paths a remove (or its undo) names that the index does not hold as such; nothing was changed."""

    exit_code, http_status = 2, 404


POINTER_NAME = ".convis-index"  # in an indexed folder whose index lives elsewhere (--index-dir): its path


def find_index_dir(*starts: Path) -> Path | None:
    """The nearest index at or above any of ``starts``: a ``.convis`` folder, or the index a folder's
    ``.convis-index`` names (written when the folder was indexed into another folder)."""
    for start in starts:
        start = start.resolve()
        for folder in [start, *start.parents]:
            found = _index_in(folder)
            if found is not None:
                return found
    return None


def _index_in(folder: Path) -> Path | None:
    """``folder``'s own index, if any: its ``.convis``, else the one its pointer file names."""
    if (folder / INDEX_DIRNAME / CATALOG_NAME).is_file():
        return folder / INDEX_DIRNAME
    try:
        named = Path((folder / POINTER_NAME).read_text(encoding="utf-8", errors="replace").strip())
    except OSError:  # none, or unreadable: no pointer
        return None
    return named if named.is_absolute() and (named / CATALOG_NAME).is_file() else None


def remember_index(folder: Path, index_dir: Path) -> str | None:
    """Let lookups from ``folder`` find an index kept elsewhere: ``folder/.convis-index`` holds its path. Nothing
    to do for ``folder/.convis``; a folder that cannot be written is left as it is, and the note returned says
    so."""
    index_dir, pointer = index_dir.resolve(), folder / POINTER_NAME
    if index_dir == (folder / INDEX_DIRNAME).resolve() or _index_in(folder) == index_dir:
        return None
    try:
        pointer.write_text(f"{index_dir}\n", encoding="utf-8")
    except OSError as exc:
        return (f"could not write {pointer} ({exc.strerror or exc}): from {folder}, pass --index-dir {index_dir} "
                "to find this index")
    return None


def locate_index(given: Path | None, *near: Path) -> Path:
    """The index folder meant by ``given`` (an index folder, or a video folder holding ``.convis`` or a pointer to
    its index), else the nearest index at or above ``near``; NoIndexError names what was looked for and any
    index just below."""
    if given is not None:
        if (given / CATALOG_NAME).is_file():
            return given
        if given.is_dir() and _index_in(given) is not None:
            return _index_in(given)
        raise NoIndexError(f"no index at {given} (looked for {given / CATALOG_NAME} and "
                           f"{given / INDEX_DIRNAME / CATALOG_NAME}); run `convis index {given}` first")
    found = find_index_dir(*near)
    if found is not None:
        return found
    stale = _stale_pointer(*near)
    if stale is not None:
        raise NoIndexError(stale)
    below = sorted(str(p.parent.parent) for start in near[-1:] for p in start.glob(f"*/{INDEX_DIRNAME}/{CATALOG_NAME}"))
    hint = f"; found {', '.join(below)}: pass one of them" if below else "; run `convis index FOLDER` first"
    raise NoIndexError(f"no {INDEX_DIRNAME} index in {near[-1] if near else Path.cwd()} or above{hint}")


def _stale_pointer(*starts: Path) -> str | None:
    """The line for the nearest ``.convis-index`` at or above ``starts`` whose index folder is gone, if any."""
    for start in starts:
        for folder in [start.resolve(), *start.resolve().parents]:
            try:
                named = (folder / POINTER_NAME).read_text(encoding="utf-8", errors="replace").strip()
            except OSError:
                continue
            return (f"{folder / POINTER_NAME} names {named}, which no longer holds an index; run "
                    f"`convis index {folder}` (with --index-dir to keep it elsewhere) to index it again")
    return None


def has_index(index_dir: Path | None) -> bool:
    return index_dir is not None and (index_dir / CATALOG_NAME).is_file()


def require_index(index_dir: Path | None) -> Path:
    """The catalog file of ``index_dir``, or NoIndexError."""
    if not has_index(index_dir):
        raise NoIndexError(f"no index at {index_dir}: run `convis index FOLDER` first")
    return index_dir / CATALOG_NAME


# said when a reader migrates a copy in memory: each read pays for it until a writer migrates the file once
OLDER_RELEASE = ("this index was written by an older convis: each read upgrades a copy of its catalog in memory; "
                 "`convis repair` (or any index run) upgrades it once")


def open_catalog(index_dir: Path | None) -> tuple[Catalog, list[str]]:
    """The catalog, read-only (see the module's notes), and the notices of reading a snapshot or an older
    release's catalog."""
    catalog, notices = _open_to_read(index_dir)
    if catalog.upgraded_in_memory:
        notices.append(OLDER_RELEASE)
    return catalog, notices


def _moved_notice(catalog: Catalog, index_dir: Path) -> list[str]:
    """A line for ``convis info`` when the index is read from another folder than it was written in (a copy, or a
    move): its files are still read from the folder it covers, which a reader would otherwise take to be the one it
    now sits in. Said by ``info`` only: answers of a server must not name its folders."""
    written = catalog.setting(WRITTEN_IN)
    if not written or Path(written) == index_dir.resolve():
        return []
    root = catalog.setting("root") or index_dir.parent
    return [f"this index was written in {written} and is read from {index_dir.resolve()} (a copy or a move): it "
            f"covers {root}; `convis index FOLDER --index-dir {index_dir} --move-root` points it at FOLDER"]


def _open_to_read(index_dir: Path | None) -> tuple[Catalog, list[str]]:
    """The catalog, read-only, and the notices of reading a snapshot instead."""
    catalog_path = require_index(index_dir)
    snapshot = index_dir / SNAPSHOT_NAME
    in_progress = "an index run is in progress; results reflect its state at {}"
    try:
        busy = writer_pid(catalog_path) is not None and snapshot.is_file()
        if busy or snapshot_is_current(catalog_path, snapshot):
            try:
                return Catalog(snapshot, read_only=True), [in_progress.format(clock(snapshot))] if busy else []
            except (CatalogDamaged, CatalogEmpty):
                pass  # read the catalog itself
        return Catalog(catalog_path, read_only=True), []
    except CatalogEmpty:
        raise NoIndexError(f"nothing is indexed in {index_dir} yet: run `convis index FOLDER`") from None
    except CatalogBusy:
        if not snapshot.is_file():
            raise CatalogBusy(f"an index run is writing {index_dir} and has not published a snapshot "
                              "yet; retry in a minute") from None
        notice = in_progress.format(clock(snapshot))
    except CatalogDamaged as damaged:
        if not snapshot.is_file():
            raise
        notice = f"{damaged}; reading the snapshot meanwhile"
    return Catalog(snapshot, read_only=True), [notice]


def reading(index_dir: Path | None, notices: list[str]) -> Catalog:
    """``open_catalog``'s catalog, its notices added to ``notices``."""
    catalog, said = open_catalog(index_dir)
    notices.extend(said)
    return catalog


def root_of(catalog: Catalog, index_dir: Path) -> Path:
    """The folder the index covers (paths in the catalog are relative to it)."""
    stored = catalog.setting("root")
    return Path(stored) if stored else index_dir.parent


def index_root(index_dir: Path, notices: list[str] | None = None) -> Path:
    """The folder the index in ``index_dir`` covers."""
    with reading(index_dir, [] if notices is None else notices) as catalog:
        return root_of(catalog, index_dir)


def unavailable_notice(catalog: Catalog) -> list[str]:
    """A line for a query's user when recall leaves files out: unavailable ones (their folder offline at the last
    index run), whose vectors are kept but which could not be played."""
    count = len(catalog.unavailable())
    if not count:
        return []
    return [f"{count} indexed file(s) not searched: their folder was missing or not mounted at the last index run "
            "(`convis ls` lists them as unavailable); the next `convis index` run that finds them searches them again"]


def protocol_of(catalog: Catalog) -> str:
    """How the index's models embed (anchors and texts are embedded as the index was)."""
    return catalog.setting(PROTOCOL) or "fast"


def info(index_dir: Path, notices: list[str]) -> dict:
    """What ``convis info`` shows of the index."""
    with reading(index_dir, notices) as catalog:
        notices.extend(_moved_notice(catalog, index_dir))
        summary = catalog.summary()
        summary["indexers"] = [
            {"indexer": r.indexer, "kind": r.kind, "dim": r.dim, "frames": r.frames, "faiss": r.faiss_factory}
            for r in catalog.indexers()
        ]
        # signals made from two stored ones (a CLIP-family model's video and caption vectors)
        summary["cross_modal_signals"] = sorted(signal_vectors.clipscore_signals(catalog).values())
        summary["descriptions"] = _descriptions(catalog)
        summary["root"] = catalog.setting("root")
        summary["protocol"] = protocol_of(catalog)
        summary["store"] = store_of(catalog)  # faiss, or where the Lance tables are (--store)
        seconds, shots = from_label(summary.pop("segment_seconds", None))
        summary["segment_seconds"] = seconds  # null: one unit per file, or shot units
        summary["segmentation"] = segmentation_label(seconds, shots)
        summary["units_by"] = describe_units(seconds, shots)
        summary["shots"] = catalog.shot_summary() if shots is not None else None
    summary["index_dir"] = str(index_dir.resolve())
    return summary


def _descriptions(catalog: Catalog) -> list[dict]:
    """Each described concept (the caption too): the units each model described, and the signal its
    descriptions are embedded into (None: not embedded, so no query uses them)."""
    signals: dict[str, list[str]] = {}
    for row in catalog.description_signals():
        signals.setdefault(row.concept, []).append(row.signal)
    described: dict[str, dict[str, int]] = {}
    for concept, model, units in catalog.described_units():
        described.setdefault(concept, {})[model] = units
    return [{"concept": concept, "described_by": by, "signals": signals.get(concept, [])}
            for concept, by in described.items()]


def files(index_dir: Path, notices: list[str]) -> list[FileListing]:
    """Every file the index knows, ok or failed, with its units (what `convis ls` lists)."""
    with reading(index_dir, notices) as catalog:
        return list_files(catalog)


def repair(index_dir: Path | None) -> Restored | None:
    """Restore a damaged catalog from its snapshot (the damaged file is kept aside); None when it is whole."""
    catalog_path = require_index(index_dir)
    try:
        Catalog(catalog_path).close()  # the writer lock: no index run is writing it meanwhile
    except CatalogDamaged:
        return restore_snapshot(catalog_path)
    return None


def writing(index_dir: Path | None) -> Catalog:
    """The catalog as its writer (CatalogBusy while an index run holds it)."""
    return Catalog(require_index(index_dir))


def relative(catalog: Catalog, index_dir: Path, paths: Sequence[str | Path]) -> list[str]:
    """``paths`` as the catalog names them (POSIX, relative to the root), in order, once each."""
    root = Path(catalog.setting("root") or index_dir.parent)
    return list(dict.fromkeys(_root_relative(Path(p), root) for p in paths))


def check_removable(catalog: Catalog, rels: list[str]) -> None:
    """NotIndexedError naming those of ``rels`` the index does not list (a remove then changes nothing)."""
    listed, excluded = catalog.file_states(), set(catalog.excluded())
    unknown = [r for r in rels if r not in listed]
    if unknown:
        again = [r for r in unknown if r in excluded]
        hint = f" ({some(again)} removed already)" if again else ""
        raise NotIndexedError(f"not in the index: {some(unknown)}{hint}")


def check_restorable(catalog: Catalog, rels: list[str]) -> None:
    """NotIndexedError naming those of ``rels`` that were not removed (an undo then changes nothing)."""
    excluded = set(catalog.excluded())
    unknown = [r for r in rels if r not in excluded]
    if unknown:
        raise NotIndexedError(f"not removed from the index: {some(unknown)}")


def removed(index_dir: Path, notices: list[str]) -> list[RemovedFile]:
    """Every file taken out of the index (what `convis ls --removed` lists)."""
    with reading(index_dir, notices) as catalog:
        return catalog.removed_files()


def _root_relative(path: Path, root: Path) -> str:
    """``path`` relative to ``root``: as given when relative, else by its place under the root: as written, with
    the folders above it resolved (the root is stored resolved), or, for a path outside the root, resolved
    whole. A symlink inside the root is indexed as itself, so it names itself, not its target."""
    if not path.is_absolute():
        if ".." in path.parts:
            raise NotIndexedError(f"not a path inside the indexed folder: {path}")
        return path.as_posix()
    written = Path(os.path.abspath(path))
    for candidate, base in ((written, root), (written.parent.resolve() / written.name, root.resolve()),
                            (path.resolve(), root.resolve())):
        if candidate.is_relative_to(base):
            return candidate.relative_to(base).as_posix()
    raise NotIndexedError(f"{path} is not inside the indexed folder {root}")
