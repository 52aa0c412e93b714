"""Indexed files a run does not find because their folder is offline: unavailable, never forgotten.

A run forgets an indexed file it no longer finds in its folder: the file was deleted. A file whose folder is
missing, cannot be listed, or is on another device than when a run last found files in it, is out of reach
instead: a share that is not mounted leaves its mount point as an empty folder on the parent's device, or no
folder at all, and one that stopped answering cannot be listed. Such a file
is marked unavailable: its units and vectors stay, recall leaves it out, and the run that finds it again makes it
available as it was, nothing embedded again. ``--prune`` forgets these files too.
"""

from __future__ import annotations

import os
import posixpath
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from retrieval.media.scan import FoundFile
from retrieval.store.catalog import Catalog
from retrieval.store.catalog.records import FileState

SHOWN_FOLDERS = 3  # offline folders a run's note names


@dataclass(frozen=True)
class Availability:
    """What a run makes of the indexed files it does not find."""

    forgotten: list[str]  # not found in a folder that is there: deleted
    unavailable: list[str]  # not found, their folder offline: kept with their vectors
    offline: list[str]  # the folders they are in, outermost only
    back: int = 0  # files unavailable before that the run finds again

    def notes(self) -> list[str]:
        """What the run says of them, a line each: the files it cannot reach, the files back."""
        lines = []
        if self.unavailable:
            shown = ", ".join(f"{f or '.'}/" for f in self.offline[:SHOWN_FOLDERS])
            more = f" and {len(self.offline) - SHOWN_FOLDERS} more" if len(self.offline) > SHOWN_FOLDERS else ""
            lines.append(f"{len(self.unavailable)} file(s) unavailable, kept with their vectors but not searched: "
                         f"their folder is missing or on another device ({shown}{more}: not mounted?); the run "
                         "that finds them makes them available again, --prune forgets them")
        if self.back:
            lines.append(f"{self.back} unavailable file(s) found again: searched again with their vectors")
        return lines


def folder_of(rel: str) -> str:
    """The root-relative folder of a catalog path ("" for the root's own files)."""
    return posixpath.dirname(rel)


def device(root: Path, folder: str) -> int | None:
    """``st_dev`` of ``folder`` under ``root``; None when it is missing, not a folder, or cannot be listed."""
    try:
        info = os.stat(root / folder)
        if not stat.S_ISDIR(info.st_mode):
            return None
        with os.scandir(root / folder):
            pass  # a share that stopped answering may still be stat'ed, but not listed
    except OSError:
        return None
    return info.st_dev


def found_devices(root: Path, found: Iterable[FoundFile]) -> dict[str, int]:
    """The device of every folder the run found files in."""
    devices = {folder: device(root, folder) for folder in {folder_of(f.rel) for f in found}}
    return {folder: dev for folder, dev in devices.items() if dev is not None}


def assess(root: Path, found: list[FoundFile], known: dict[str, FileState], recorded: dict[str, int]) -> Availability:
    """Split the indexed files of ``known`` that are not among ``found`` into forgotten and unavailable:
    unavailable when their folder is missing or its device is not the one ``recorded`` for it."""
    present = {f.rel for f in found}
    absent = sorted(p for p in known if p not in present)
    offline = {folder for folder in {folder_of(p) for p in absent}
               if (now := device(root, folder)) is None or recorded.get(folder, now) != now}
    return Availability(forgotten=[p for p in absent if folder_of(p) not in offline],
                        unavailable=[p for p in absent if folder_of(p) in offline], offline=_outermost(offline),
                        back=sum(known[p].unavailable for p in present if p in known))


def settle(catalog: Catalog, root: Path, found: list[FoundFile], prune: bool = False) -> Availability:
    """Mark the files this run cannot reach unavailable (with ``prune``: none, so the run forgets them), every
    other one available, and record the devices of the folders files were found in."""
    known = catalog.file_states()
    seen = assess(root, found, known, catalog.folder_devices())
    if prune:
        seen = Availability(seen.forgotten + seen.unavailable, [], [], seen.back)
    catalog.set_unavailable(seen.unavailable)
    catalog.record_folder_devices(found_devices(root, found))
    return seen


def _outermost(folders: set[str]) -> list[str]:
    """``folders`` less those inside another of them, sorted."""
    return sorted(f for f in folders if not any(f.startswith(o + "/") or (o == "" and f) for o in folders))
