"""Line readers in an indexing run: what they read off a file's sampled frames, as the timed lines the catalog keeps.

A line reader (an indexer of kind ``"lines"``, such as ``ocr``) reads the frames the run decoded for every indexer
(its own frame spec among theirs, so nothing is decoded twice) where the models run, and the run stores one read a
file with ``Catalog.replace_lines``; a file whose stored read has the reader's stamp is not read again
(``line_sources.is_current``).

Merging: a line read on consecutive sampled frames with the same text (compared without spaces or case: the
recogniser drops a space between words on one frame and not the next) and boxes that overlap (intersection over
union at least ``SAME_PLACE``) is one line from the first of those frames' time to the last's, with the highest
confidence it was read with, its first box, and the reading with the most words (ties: the first). A sampled
frame between them without it ends the line.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Mapping, Sequence

from retrieval.pipeline.line_sources import is_current
from retrieval.store.catalog.records import FileState, TimedLine

if TYPE_CHECKING:  # the decode workers import this module with the stages: not the catalog's database
    from retrieval.media.frames import Frames
    from retrieval.store.catalog import Catalog

LINES = "lines"  # the indexer kind of line readers
SAME_PLACE = 0.5  # box overlap (IoU) above which a line on the next sampled frame is the same line
FrameReads = list[tuple[float, list]]  # (seconds, what the reader read off that frame), by time


def is_reader(indexer) -> bool:
    return getattr(indexer, "kind", None) == LINES


def read_units(reader, units: Sequence[Frames]) -> FrameReads:
    """What ``reader`` reads off each distinct sampled frame of these units, by time."""
    seen: dict[int, tuple[float, object]] = {}
    for frames in units:
        for pixels, seconds, index in zip(frames.pixels, frames.timestamps, frames.indices, strict=False):
            if index not in seen:  # a frame two units share (padding, a shared boundary) is read once
                seen[index] = (float(seconds), pixels)
    ordered = sorted(seen.values(), key=lambda item: item[0])
    return [(seconds, reads) for (seconds, _), reads in
            zip(ordered, reader.read_frames([pixels for _, pixels in ordered]), strict=True)]


def timed_lines(reads: FrameReads, source: str, origin: str) -> list[TimedLine]:
    """The lines of a file's frame reads, a line on consecutive frames merged (the module's rule), by start."""
    done: list[TimedLine] = []
    open_: list[TimedLine] = []
    for seconds, found in sorted(reads, key=lambda item: item[0]):
        still: list[TimedLine] = []
        for text in found:
            match = next((x for x in open_ if _key(x.text) == _key(text.text) and _iou(x.box, text.box) >= SAME_PLACE),
                         None)
            if match is not None:
                open_.remove(match)
                words = max((match.text, text.text), key=lambda t: len(t.split()))
                still.append(TimedLine(source, origin, match.start, seconds, words,
                                       max(match.confidence, text.confidence), match.box))
            else:
                still.append(TimedLine(source, origin, seconds, seconds, text.text, text.confidence, text.box))
        done += open_  # not on this frame: ended
        open_ = still
    return sorted(done + open_, key=lambda x: (x.start, x.box[1] if x.box else 0.0, x.box[0] if x.box else 0.0))


def _key(text: str) -> str:
    return "".join(text.split()).casefold()


def _iou(a, b) -> float:
    if a is None or b is None:
        return 0.0
    w = min(a[2], b[2]) - max(a[0], b[0])
    h = min(a[3], b[3]) - max(a[1], b[1])
    if w <= 0 or h <= 0:
        return 0.0
    inter = w * h
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0


def current_files(catalog: Catalog, reader, states: Mapping[str, FileState]) -> set[str]:
    """The indexed files whose bytes hold a read by ``reader`` with its current stamp: nothing to read again."""
    return {rel for rel, state in states.items() if state.status == "ok" and state.content_hash
            and is_current(catalog.line_stamps(state.content_hash, reader.name), reader.origin, reader.stamp)}


def store_reads(catalog: Catalog, content_hash: str, reader, reads: FrameReads) -> int:
    """One file's read, stored whole (maybe no lines: the file is then recorded as read), in place of any
    earlier version's (its origin names the version: both kept would show every line twice); the lines the
    catalog could not take (each skipped alone)."""
    return catalog.replace_lines(content_hash, reader.name, reader.origin, reader.stamp,
                          timed_lines(reads, reader.name, reader.origin), alone=True)
