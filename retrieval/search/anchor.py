"""The anchor of a query: the file checked, and its vector from each signal.

An anchor that is indexed whole (one unit, no --start/--end) has its vectors in the catalog;
any other anchor is decoded with each model's own frames and embedded once, then read from the
anchor cache (``retrieval.store.caches.anchor``).  A new anchor has no caption, so a concept scored
by the text signal falls back to its best visual signal.
"""

from __future__ import annotations

import hashlib
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable

import numpy as np

from indexers.base import Indexer
from retrieval.core.errors import ConvisError
from retrieval.core.sampling import FrameSpec
from retrieval.core.signal_kinds import clipscore_parts
from retrieval.core.timecode import format_time
from retrieval.lmm.clips import ClipRef
from retrieval.media.frames import DecodeError, SpanError
from retrieval.media.scan import content_hash
from retrieval.media.video_decoder import VideoDecoder
from retrieval.search import signals
from retrieval.store.catalog import Catalog, concept_settings
from retrieval.store.catalog.records import UnitRow
from retrieval.store.vectors import signals as signal_vectors


class AnchorError(ConvisError, ValueError):
    """The anchor video is missing, unreadable or not a video."""

    exit_code, http_status = 2, 400


class AnchorSpanError(AnchorError):
    """The anchor's time window holds nothing: it starts at or past the end of the video."""

    def __init__(self, path: Path, start: float, duration: float):
        super().__init__(f"the anchor window starts at {format_time(start)}, past the end of {path.name} "
                         f"({duration:.1f} s)")
        self.path, self.start, self.duration = path, start, duration


def check_file(anchor: str | Path, what: str = "anchor") -> Path:
    """The path of a readable file, or AnchorError saying what is wrong with it."""
    path = Path(anchor).expanduser()
    if not path.exists():
        raise AnchorError(f"{what} not found: {anchor}")
    if not path.is_file():
        raise AnchorError(f"{what} is not a file: {anchor}")
    if not os.access(path, os.R_OK):
        raise AnchorError(f"{what} is not readable: {anchor}")
    return path


@dataclass(frozen=True)
class Anchor:
    """A checked anchor file, its content hash, and the span a query uses (None: from the start, to the end)."""

    path: Path
    content_hash: str
    start: float | None = None
    end: float | None = None

    @classmethod
    def of(cls, anchor: str | Path, start: float | None = None, end: float | None = None) -> Anchor:
        if start is not None and end is not None and end <= start:
            raise AnchorError(f"the anchor window ends ({format_time(end)}) before it starts ({format_time(start)})")
        path = check_file(anchor)
        return cls(path, content_hash(path), start, end)

    @property
    def whole(self) -> bool:
        return self.start is None and self.end is None

    @property
    def clip(self) -> ClipRef:
        return ClipRef(str(self.path), self.content_hash, self.start or 0.0, self.end)

    def overlaps(self, unit: UnitRow) -> bool:
        """``unit`` is (part of) the anchor itself: the same content over an overlapping time span."""
        end = self.end if self.end is not None else math.inf
        return unit.content_hash == self.content_hash and unit.start < end and unit.end > (self.start or 0.0)

    def pixels(self, frames: FrameSpec) -> np.ndarray:
        """The anchor's span decoded as ``frames`` says."""
        decoder = VideoDecoder()
        try:
            if self.whole:
                _, units = decoder.sample(self.path, frames)
                return units[0][1].pixels
            return decoder.sample_span(self.path, frames, self.start or 0.0, self.end).pixels
        except SpanError as exc:
            raise AnchorSpanError(self.path, exc.start, exc.duration) from None
        except DecodeError as exc:
            raise AnchorError(f"anchor {self.path} is not a readable video: {exc}") from None


@dataclass(frozen=True)
class ConceptSignals:
    """Per concept, the signal (indexer model id) that scores it, and the anchor's vector from each."""

    signal_of: dict[str, str]
    vectors: dict[str, np.ndarray]
    notices: list[str]  # fallbacks the user should know about


Cached = Callable[[str, Callable[[], np.ndarray]], np.ndarray]


class AnchorVectors:
    """The anchor's vectors, from one open catalog and the models ``indexer`` builds (by model id); ``cached``:
    (model id, embed) -> the vector from a cache that holds it, else ``embed()`` (None: always embed)."""

    def __init__(self, anchor: Anchor, catalog: Catalog, indexer: Callable[[str], Indexer],
                 cached: Cached | None = None):
        self.anchor, self.catalog, self.indexer = anchor, catalog, indexer
        self.cached = cached or (lambda _model_id, embed: embed())
        # a span of a file is not what the catalog stored for it
        self.stored_path = next(iter(catalog.files_by_hash(anchor.content_hash)), None) if anchor.whole else None
        # what each signal reads, from the catalog: asking a built model would build it, cache hit or not
        self.kinds = {**{r.indexer: r.kind for r in catalog.indexers()},
                      **{s.signal: "text" for s in catalog.description_signals()}}
        # a concept-conditioned indexer's signal of one concept: (its model id, the concept's words)
        conditioned, added = set(concept_settings.conditioned_ids(catalog)), concept_settings.added_concepts(catalog)
        self.concepts = {s.signal: (s.indexer, added.get(s.concept, s.concept)) for s in catalog.description_signals()
                         if s.indexer in conditioned}
        self.kinds.update({signal: "video" for signal in self.concepts})

    def stored(self, model_id: str) -> np.ndarray | None:
        if self.stored_path is None:
            return None
        vectors = signal_vectors.query_vectors(self.catalog, self.stored_path, model_id)
        return vectors[0] if len(vectors) == 1 else None  # a segmented file is no single anchor

    def unstored(self, what: str) -> str:
        """Why the catalog holds no ``what`` (a caption, a description) of the anchor, in the words of its case."""
        if not self.anchor.whole:
            return f"the anchor is a time window, and the index keeps a {what} per indexed unit"
        if self.stored_path is None:
            removed = self.removed_as()
            if removed is not None:  # its rows are kept aside, out of every search, until an undo
                return (f"the anchor is {removed}, removed from the index (convis remove); its kept {what} and "
                        f"vectors come back with `convis remove --undo {removed}`")
            return "the anchor is a new file, not in the index"
        units = len(self.catalog.unit_ids(self.stored_path))
        if units > 1:
            return (f"it holds {self.anchor.path.name} as {units} units (segments or shots) with a {what} each, "
                    "and the anchor is the whole file")
        return f"the anchor's unit has no {what} yet"

    def removed_as(self) -> str | None:
        """The anchor's path in the index when it is a file removed from it (``convis remove``), else None."""
        root = self.catalog.setting("root")
        try:
            path = self.anchor.path.resolve().relative_to(Path(root).resolve()).as_posix() if root else None
        except ValueError:  # outside the indexed folder
            return None
        return path if path in set(self.catalog.excluded()) else None

    def caption(self, captions: dict[int, str]) -> str | None:
        """The anchor's caption from ``captions`` (unit id -> caption), when it is indexed whole as one unit."""
        ids = self.catalog.unit_ids(self.stored_path) if self.stored_path is not None else []
        return captions.get(ids[0]) if len(ids) == 1 else None

    def visual(self, model_id: str) -> np.ndarray:
        """The anchor's vector of one visual signal: the stored one, else embedded now."""
        vector = self.stored(model_id)
        return vector if vector is not None else self.embedded(model_id)

    def embedded(self, model_id: str) -> np.ndarray:
        if model_id in self.concepts:
            return self._embedded_for_concept(model_id)

        def embed() -> np.ndarray:
            model = self.indexer(model_id)
            return model.embed_units([self.anchor.pixels(model.frame_spec)])[0]

        return self.cached(model_id, embed)

    def _embedded_for_concept(self, signal: str) -> np.ndarray:
        """The anchor embedded as the units of a concept-conditioned signal were: under its concept's instruction
        (cached under that instruction's digest, so a changed wording embeds again)."""
        indexer, words = self.concepts[signal]
        model = self.indexer(indexer)
        instruction = model.instructions.for_concept(signal.rpartition("#")[2], words)
        digest = hashlib.sha1(instruction.encode("utf-8")).hexdigest()[:16]
        return self.cached(f"{signal}@{digest}", lambda: model.embed_units([self.anchor.pixels(model.frame_spec)],
                                                                           instruction)[0])

    def per_concept(self, chosen: dict[str, str], indexed: dict[str, str]) -> ConceptSignals:
        """The vector of each concept's chosen signal (``indexed``: indexer name -> model id)."""
        signal_of, vectors, notices = {}, {}, []
        for concept, model_id in chosen.items():
            vector = self.stored(model_id)
            if vector is None:
                if self._needs_caption(model_id):  # a new anchor has no caption
                    replacement = self._best_visual(concept, indexed)
                    notices.append(f"{concept}: the anchor has no caption of its own in the index: "
                                   f"{self.unstored('caption')}; scored with {replacement} instead of {model_id}")
                    model_id = replacement
                vector = self.embedded(model_id)
            signal_of[concept] = model_id
            vectors[model_id] = vector
        return ConceptSignals(signal_of, vectors, notices)

    def descriptions(self, beside: dict[str, str]) -> ConceptSignals:
        """The anchor's stored vector of each concept's description signal (``beside``: concept -> signal);
        an anchor with none (not indexed whole, or not described) is scored without it, with a notice."""
        signal_of, vectors, missing = {}, {}, []
        for concept, signal in beside.items():
            vector = self.stored(signal)
            if vector is None:
                missing.append(concept)
                continue
            signal_of[concept], vectors[signal] = signal, vector
        notices = [f"{', '.join(missing)}: the anchor has no description in the index: "
                   f"{self.unstored('description')}; its description signal is not used"] if missing else []
        return ConceptSignals(signal_of, vectors, notices)

    def every_signal(self, indexed: dict[str, str], known: dict[str, np.ndarray],
                     captioned: Iterable[str] = ()) -> dict[str, np.ndarray]:
        """``known`` and the vector from every other indexed signal that can give one (fusion uses them all;
        ``captioned``: signals only an indexed anchor has a vector of, CLIPScore)."""
        vectors = dict(known)
        for signal in captioned:
            if signal not in vectors and (vector := self.stored(signal)) is not None:
                vectors[signal] = vector
        for model_id in indexed.values():
            if model_id in vectors:
                continue
            vector = self.stored(model_id)
            if vector is None and self._kind(model_id) != "text":  # a new anchor has no caption
                vector = self.embedded(model_id)
            if vector is not None:
                vectors[model_id] = vector
        return vectors

    def _needs_caption(self, signal: str) -> bool:
        """Whether ``signal`` compares captions (the text indexer, CLIPScore): a new anchor has none."""
        return clipscore_parts(signal) is not None or self._kind(signal) == "text"

    def _best_visual(self, concept: str, indexed: dict[str, str]) -> str:
        visual = {name: model_id for name, model_id in indexed.items() if self._kind(model_id) != "text"}
        return signals.choose(concept, visual)

    def _kind(self, signal: str) -> str:
        return self.kinds.get(signal) or self.indexer(signal).kind
