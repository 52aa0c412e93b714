"""Small indexes of the example clips that tests build and then work on."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Sequence

from retrieval.api import Engine
from retrieval.pipeline.settings import IndexSettings
from tests.paths import EXAMPLES

CAPTIONS = EXAMPLES.parent / "captions"


def indexed_copies(base: Path, names: Sequence[str], indexers: Sequence[str], **settings) -> Path:
    """``base/videos`` holding copies of the example clips ``names``, indexed into its .convis (one decode
    worker) with ``indexers`` and ``settings``; the folder is returned."""
    videos = base / "videos"
    videos.mkdir()
    for name in names:
        shutil.copy(EXAMPLES / name, videos / name)
    Engine(videos / ".convis").index(videos, list(indexers), IndexSettings(workers=1, **settings))
    return videos


def copied_index(folder: Path, dest: Path) -> Path:
    """A writable copy of an indexed ``folder`` at ``dest``, its catalog's root moved with it."""
    from retrieval.store.catalog import Catalog

    shutil.copytree(folder, dest, symlinks=True)
    with Catalog(dest / ".convis" / "catalog.duckdb") as catalog:
        catalog.set_setting("root", str(dest.resolve()))
    return dest


def scratch_index(index_dir: Path, dest: Path) -> Path:
    """A writable copy of the index at ``index_dir`` and of the videos of its root, at ``dest/videos``; the copy's
    index folder is returned (tests that write change only the copy).  The copy's catalog and the snapshot readers
    read while a run writes both name the copy as their root."""
    from retrieval.store.catalog import Catalog
    from retrieval.store.snapshots import CATALOG_NAME, SNAPSHOT_NAME

    with Catalog(index_dir / CATALOG_NAME, read_only=True) as catalog:
        root = Path(catalog.setting("root"))
    videos = dest / "videos"
    shutil.copytree(root, videos, ignore=shutil.ignore_patterns(".*"))
    shutil.copytree(index_dir, videos / ".convis", ignore=shutil.ignore_patterns("scores.duckdb"))
    for name in (CATALOG_NAME, SNAPSHOT_NAME):  # the snapshot last: it stays as current as it was
        if (videos / ".convis" / name).is_file():
            with Catalog(videos / ".convis" / name) as catalog:
                catalog.set_setting("root", str(videos.resolve()))
    return videos / ".convis"
