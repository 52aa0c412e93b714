"""The rows the catalog stores and hands back, as values: files, units, indexers, descriptions."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class FileState:
    file_id: int
    size: int
    mtime: float
    content_hash: str | None
    status: str
    error: str | None = None  # why it failed (status "failed"); status "ok": what of it could not be decoded
    transient: bool = False  # it failed for a passing reason (timeout, crash, full disk): a later run retries it
    unavailable: bool = False  # its folder was offline at the last run: kept with its vectors, not searched
    stat_key: str | None = None  # ``FoundFile.stat_key`` when it was last read; None: not recorded


@dataclass(frozen=True)
class FileRecord:
    path: str  # relative to the index root, POSIX separators
    size: int
    mtime: float
    content_hash: str
    duration: float
    fps: float
    width: int
    height: int
    frame_count: int
    decoder: str
    units_by: str = ""  # how its units were cut (``retrieval.core.segmentation`` label); "" when not recorded
    note: str = ""  # what of it could not be decoded (a damaged file, indexed from the rest); kept as its error
    codec: str = ""  # the video stream's codec; "" when the decoder did not say
    stat_key: str = ""  # ``FoundFile.stat_key``; "" when not read


@dataclass(frozen=True)
class UnitRecord:
    """One unit of a file as an index run writes it: its place in the file and the frames that stand for it."""

    segment: int
    start: float
    end: float
    frame_times: tuple[float, ...]
    boundary: str | None = None  # shot units: "start", "cut" or "split"; None: fixed units
    confidence: float | None = None  # of the detected cut that starts the unit


@dataclass(frozen=True, kw_only=True)
class UnitRow(UnitRecord):
    """A stored unit as recall reads it back: the record, with its id and its file."""

    unit_id: int
    path: str
    content_hash: str | None


@dataclass(frozen=True)
class IndexerRow:
    indexer: str
    name: str
    source: str
    kind: str
    dim: int
    frames: int
    faiss_factory: str | None


@dataclass(frozen=True)
class DescriptionSignal:
    """A text indexer's vectors of one concept's descriptions: a signal of its own, with its own FAISS index."""

    signal: str  # "<text indexer model id>#<concept key>"
    indexer: str  # the text indexer's model id
    concept: str
    dim: int
    faiss_factory: str | None = None


@dataclass(frozen=True)
class DescriberKey:
    """Which model wrote a description, and how it was asked: with the unit, the description's cache key."""

    model: str  # the model's stable id, e.g. "llava-onevision:llava-hf/..."
    revision: str  # its weights: hub commit or a hash of the local folder
    prompt_version: str  # the requests and the frames it saw


@dataclass(frozen=True)
class Description:
    """One stored answer: a unit's caption (concept "caption") or its description of one concept.

    Units are named by their bytes and span, not their file, so the same bytes under another
    name, or a re-index, find it again. ``status`` "ok", or "unreadable" with the reason in ``error``.
    """

    content_hash: str
    start: float
    end: float
    concept: str
    key: DescriberKey
    text: str | None
    status: str = "ok"
    error: str | None = None


# descriptions read from ``<stem>.txt`` / ``<stem>.<concept>.txt`` files: written by a person or another tool
FILE_KEY = DescriberKey("file", "", "file")


@dataclass(frozen=True)
class TimedLine:
    """One line of text a file shows or says at a time: read on screen (``ocr``), a subtitle cue (``subtitle``) or
    recognised speech (``speech``). Lines belong to the file's bytes, not its name, as descriptions do."""

    source: str  # one of LINE_SOURCES
    origin: str  # what made it: the model's id, or the subtitle file or stream it was read from
    start: float  # seconds into the file; a line read off one frame has end == start
    end: float
    text: str
    confidence: float | None = None  # the recogniser's, in [0, 1]
    box: tuple[float, float, float, float] | None = None  # on screen: x0, y0, x1, y1 as fractions of the frame
    language: str | None = None


LINE_SOURCES = ("ocr", "subtitle", "speech")


def span_key(seconds: float) -> float:
    # spans are keyed to the millisecond: the same unit read again never misses its rows by a rounding
    return round(float(seconds), 3)


BACKGROUND_QUANTILES = (0.01, 0.10, 0.25, 0.50, 0.75, 0.90, 0.95, 0.99)  # the backgrounds table's q01 ... q99


@dataclass(frozen=True)
class BackgroundRow:
    """One signal's background: the similarity of ``pairs`` random pairs of distinct units (of ``units`` that have
    a vector of it) at ``BACKGROUND_QUANTILES``, as of the catalog's ``generation``."""

    signal: str
    units: int
    pairs: int
    quantiles: tuple[float, ...]
    generation: int

    def at(self, q: float) -> float:
        return self.quantiles[BACKGROUND_QUANTILES.index(q)]
