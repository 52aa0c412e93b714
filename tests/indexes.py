"""Small indexes of the example clips that tests build and then work on."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Sequence

from retrieval.engine import Engine
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
