"""Subtitles into the catalog's timed lines: every indexed file's sidecar subtitles (``talk.srt``, ``talk.en.vtt``)
and the text subtitle streams inside it, as ``subtitle`` lines kept by the file's bytes.

A sidecar is read again when its stamp (size:mtime) changes and forgotten when it is gone; streams are part of
the bytes, read once (a file without any is recorded so, origin ``stream:none``); ``line_sources.is_current`` is
the rule. Files holding the same bytes share their lines, so the sidecars of all of them are read. What a read
could not take as it came is said once per problem class for the whole run (``SubtitleProblems.notes``).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from retrieval.core.errors import some
from retrieval.media.subtitles import PROBLEMS, Sidecar, SubtitleRead, read_sidecar, read_streams, sidecars
from retrieval.pipeline.line_sources import is_current, unstored_note
from retrieval.store.catalog import Catalog
from retrieval.store.catalog.records import TimedLine

SOURCE = "subtitle"
STREAM = "stream:"  # the origin prefix of a stream's lines: stream:N, N the container's stream index
NO_STREAMS = "stream:none"  # the record of a file read with no text subtitle stream in it
STREAMS_STAMP = "streams-1"  # streams are part of the bytes: read again only when this reading changes


@dataclass
class SubtitleProblems:
    """What the run's reads could not take as it came: problem class -> (count, the files it came up in)."""

    seen: dict[str, tuple[int, list[str]]] = field(default_factory=dict)
    files: int = 0  # sidecars and streams read in the run
    unstored: int = 0  # cues the catalog could not take (a lone surrogate in the text): each skipped alone

    def add(self, name: str, read: SubtitleRead) -> None:
        self.files += 1
        for kind, count in read.problems.items():
            total, names = self.seen.get(kind, (0, []))
            self.seen[kind] = (total + count, [*names, _named(name, kind, read)])

    def notes(self) -> list[str]:
        out = []
        for kind, (count, names) in self.seen.items():
            what = PROBLEMS[kind]
            shown = some(names, 3)
            counted = f"{len(names)} subtitle file(s)" if kind in ("encoding", "unreadable") else f"{count}"
            out.append(f"subtitles: {counted} {what} ({shown})")
        if self.unstored:
            out.append(unstored_note("subtitles", self.unstored, "cue(s)"))
        return out


def _named(name: str, kind: str, read: SubtitleRead) -> str:
    """A file as a problem line names it: with its fallback encoding, or why it was not read."""
    if kind == "encoding":
        return f"{name}: {read.encoding}"
    return f"{name}: {read.reason}" if kind == "unreadable" and read.reason else name


@dataclass
class SubtitleWork:
    """One file's bytes whose subtitles changed: its first path here, the sidecars beside any of its paths."""

    digest: str
    video: Path
    sidecars: dict[str, Sidecar]
    stamps: dict[str, str]  # origin -> stamp of each read stored
    root: Path | None = None  # the indexed folder: a sidecar linked out of it is not read


def pending(catalog: Catalog, root: Path) -> list[SubtitleWork]:
    """The indexed files whose subtitles must be read (or forgotten): a sidecar new, changed or gone, streams
    never read (``line_sources.is_current``).  Files offline are left as they are."""
    listings: dict[Path, list[str]] = {}
    work = []
    for digest, paths in files_by_bytes(catalog, root).items():
        found = {s.path.name: s for p in paths for s in sidecars(p, _names(listings, p.parent))}
        stamps = catalog.line_stamps(digest, SOURCE)
        item = SubtitleWork(digest, paths[0], found, stamps, root)
        if _gone(item) or _changed(item) or not is_current(stamps, STREAM, STREAMS_STAMP):
            work.append(item)
    return work


def sync(catalog: Catalog, work: list[SubtitleWork]) -> SubtitleProblems:
    """Read what changed of these files' subtitles (``pending``) into the catalog."""
    problems = SubtitleProblems()
    for item in work:
        _sync_sidecars(catalog, item, problems)
        _sync_streams(catalog, item.digest, item.video, problems)
    return problems


def files_by_bytes(catalog: Catalog, root: Path) -> dict[str, list[Path]]:
    """The paths here now of each indexed file's bytes (files offline or failed left out)."""
    by_bytes: dict[str, list[Path]] = defaultdict(list)
    for rel, state in sorted(catalog.file_states().items()):
        path = root / rel
        if state.status == "ok" and state.content_hash and not state.unavailable and path.is_file():
            by_bytes[state.content_hash].append(path)
    return by_bytes


def _names(listings: dict[Path, list[str]], folder: Path) -> list[str]:
    """A folder's listing, taken once a run (a folder of many videos is listed once, not once a video)."""
    if folder not in listings:
        try:
            listings[folder] = [p.name for p in folder.iterdir()]
        except OSError:
            listings[folder] = []
    return listings[folder]


def _gone(item: SubtitleWork) -> list[str]:
    """The sidecars read before whose file is gone."""
    return [o for o in item.stamps if not o.startswith(STREAM) and o not in item.sidecars]


def _changed(item: SubtitleWork) -> list[tuple[Sidecar, str]]:
    """(sidecar, its stamp now) of each sidecar new or changed since its read."""
    changed = []
    for name, sidecar in item.sidecars.items():
        try:
            stamp = sidecar.stamp()
        except OSError:
            continue  # gone since the listing
        if not is_current(item.stamps, name, stamp):
            changed.append((sidecar, stamp))
    return changed


def _sync_sidecars(catalog: Catalog, item: SubtitleWork, problems: SubtitleProblems) -> None:
    for origin in _gone(item):
        catalog.forget_lines(item.digest, SOURCE, origin)  # its file is gone
    for sidecar, stamp in _changed(item):
        name = sidecar.path.name
        read = read_sidecar(sidecar.path, item.root)
        problems.add(name, read)
        lines = _lines(read, name, sidecar.language)
        problems.unstored += catalog.replace_lines(item.digest, SOURCE, name, stamp, lines)


def _sync_streams(catalog: Catalog, digest: str, video: Path, problems: SubtitleProblems) -> None:
    if is_current(catalog.line_stamps(digest, SOURCE), STREAM, STREAMS_STAMP):
        return
    streams = read_streams(video)
    if not streams:
        catalog.replace_lines(digest, SOURCE, NO_STREAMS, STREAMS_STAMP, [])
        return
    for s in streams:
        problems.add(f"{video.name} {STREAM}{s.index}", s.read)
    # all streams in one transaction: any one recorded means every one was (the check above)
    problems.unstored += catalog.replace_reads(digest, SOURCE, [(f"{STREAM}{s.index}", STREAMS_STAMP,
                                                                 _lines(s.read, f"{STREAM}{s.index}", s.language))
                                                                for s in streams])


def _lines(read: SubtitleRead, origin: str, language: str | None) -> list[TimedLine]:
    return [TimedLine(SOURCE, origin, c.start, c.end, c.text, language=language) for c in read.cues]
