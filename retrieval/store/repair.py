"""Restore a damaged catalog from the snapshot its writer last published, keeping the damaged file aside."""

from __future__ import annotations

import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from retrieval.store.catalog import Catalog
from retrieval.store.errors import CatalogDamaged, DiskFull, is_disk_full
from retrieval.store.snapshots import clock, published_snapshot


@dataclass(frozen=True)
class Restored:
    """What restoring a damaged catalog from its snapshot did, and what it lost."""

    catalog: Path
    kept_aside: Path  # the damaged file, renamed, never deleted
    snapshot_time: str
    files: int  # files the restored catalog holds (ok and failed)

    def __str__(self) -> str:
        return (f"the catalog {self.catalog} was damaged: kept it aside as {self.kept_aside.name} and restored the "
                f"snapshot of {self.snapshot_time} holding {self.files} file(s); files indexed after it are "
                "indexed again by the next run")


def restore_snapshot(catalog_path: Path) -> Restored:
    """Put the published snapshot in place of a damaged catalog, keeping the damaged file (and its log) aside."""
    catalog_path = Path(catalog_path)
    snapshot = published_snapshot(catalog_path)
    if snapshot is None or not snapshot.is_file():
        raise CatalogDamaged(catalog_path, "it cannot be read back")
    when = clock(snapshot)
    with Catalog(snapshot, read_only=True) as copy:  # a damaged snapshot is refused before anything moves
        files = copy.db.execute("SELECT count(*) FROM files").fetchone()[0]
    stamp = time.strftime("%Y%m%d-%H%M%S")
    aside = catalog_path.with_name(f"{catalog_path.name}.damaged-{stamp}")
    wal = catalog_path.with_name(catalog_path.name + ".wal")
    tmp = catalog_path.with_name(f".{catalog_path.name}.restore.tmp")
    _copy(snapshot, tmp)
    if catalog_path.exists():
        os.replace(catalog_path, aside)
    if wal.exists():  # the log belongs to the damaged file: replayed onto the snapshot it would corrupt it
        os.replace(wal, aside.with_name(aside.name + ".wal"))
    os.replace(tmp, catalog_path)
    os.utime(snapshot)  # the snapshot is as current as the catalog now is
    return Restored(catalog_path, aside, when, files)


def _copy(src: Path, dest: Path) -> None:
    try:
        shutil.copyfile(src, dest)
        with open(dest, "rb+") as fh:
            os.fsync(fh.fileno())
    except OSError as exc:
        dest.unlink(missing_ok=True)
        if is_disk_full(exc):
            raise DiskFull("restoring the catalog from its snapshot", dest) from None
        raise
