"""What a hit's scores rest on: the frames each signal saw, the unit's caption and descriptions.

Which frames a model saw is worked out, not decoded: the model's frame rule (its registry card says which, for
the index's protocol, without loading its weights) and its frame count (the catalog's ``indexers.frames``) over
the file's frame count and rate give the same frame numbers indexing sampled (``retrieval.media.unit_frames``).
The unit's frame times recorded at indexing are checked against them: a file changed since says so in a notice.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from fastapi import APIRouter, Query
from fastapi.responses import Response

from retrieval.api import (
    CAPTION,
    FILE_KEY,
    FRAME_RULES,
    INDEXERS,
    RULE_TEXT,
    Description,
    FrameSpec,
    IndexerRow,
    UnitRecord,
    UnknownModelError,
    VideoInfo,
    describe_sampling,
    frame_time,
    nearest_frame,
    stored_span,
    unit_frames,
)
from retrieval.serve.errors import ApiError, responses
from retrieval.serve.fields import ref_path
from retrieval.serve.guards import ORIGIN_CHECKED
from retrieval.serve.state import ServerState
from retrieval.serve.thumbs import to_jpeg

FRAME_CACHE_SIZE = 512  # single small JPEGs (a few KB each)
PROBE_CACHE_SIZE = 256
MAX_LISTED = 64  # an every-frame model sees hundreds of frames a unit; a panel shows this many, evenly picked
ONE_FRAME = FrameSpec("linspace", 1)  # linspace over a span that starts at a frame: that very frame

REF = ref_path("Indexed path relative to the index root.")
SEGMENT = Query(0, ge=0, description="Which unit of the file (its segment number; 0 for a whole-file unit).")
SECONDS = Query(..., ge=0, allow_inf_nan=False, description="Seconds into the video; the nearest frame is served.")


class LRU:
    """A small thread-safe least-recently-used map (frames and probes, keyed by file identity)."""

    def __init__(self, size: int):
        self.size, self.items, self.lock = size, OrderedDict(), threading.Lock()

    def get(self, key, make):
        with self.lock:
            if key in self.items:
                self.items.move_to_end(key)
                return self.items[key]
        value = make()  # made outside the lock: other requests go on meanwhile
        with self.lock:
            self.items[key] = value
            while len(self.items) > self.size:
                self.items.popitem(last=False)
        return value


@dataclass(frozen=True)
class IndexedUnit:
    """What the catalog holds about one unit, read under the engine's lock."""

    unit: UnitRecord
    indexers: list[IndexerRow]
    description_signals: list  # DescriptionSignal rows
    descriptions: list[Description]
    protocol: str
    notices: list[str]


def evidence_routes(state: ServerState) -> APIRouter:
    router = APIRouter()
    frames, probes = LRU(FRAME_CACHE_SIZE), LRU(PROBE_CACHE_SIZE)

    def probe(path: Path) -> VideoInfo:
        return probes.get(_identity(path), lambda: state.decoder.probe(path))

    @router.get("/evidence/{ref:ref}", summary="What a unit's scores rest on: the frames each signal saw, its "
                "caption and descriptions", responses=responses(400, 403, 404, 422, 503),
                dependencies=ORIGIN_CHECKED)
    async def evidence(ref: str = REF, segment: int = SEGMENT):
        return await state.workers.run(unit_evidence, ref, segment)

    def unit_evidence(ref: str, segment: int) -> dict:
        path = state.resolve(ref)
        indexed = read_unit(state, ref, segment)
        info = probe(path)
        return evidence_answer(ref, indexed, info, state.public)

    @router.get("/frame/{ref:ref}", summary="One JPEG frame of a clip, the one nearest a time",
                responses={200: {"content": {"image/jpeg": {}}}, **responses(400, 403, 404, 422, 503)},
                dependencies=ORIGIN_CHECKED)
    async def frame(ref: str = REF, t: float = SECONDS):
        jpeg = await state.workers.run(frame_jpeg, ref, t)
        return Response(jpeg, media_type="image/jpeg", headers={"Cache-Control": "private, max-age=300"})

    def frame_jpeg(ref: str, t: float) -> bytes:
        path = state.resolve(ref)
        info = probe(path)
        index = nearest_frame(info, t)
        if index is None:
            raise ApiError(404, f"t={t:g} s is past the end of {ref} ({info.duration:.3f} s)")
        return frames.get((*_identity(path), index), lambda: to_jpeg(decode_frame(state.decoder, path, info, index)))

    return router


def _identity(path: Path) -> tuple:
    stat = path.stat()  # a file rewritten in place is another file
    return str(path), stat.st_mtime_ns, stat.st_size


def decode_frame(decoder, path: Path, info: VideoInfo, index: int):
    """Frame ``index`` of the file, at the decoder's thumbnail size: a one-frame span starting a quarter frame
    into it, so the span's first frame (its start times the rate, rounded down) is that frame."""
    start = min((index + 0.25) / info.fps, info.duration - 1e-6) if info.fps > 0 else 0.0
    return decoder.sample_span(path, ONE_FRAME, max(0.0, start), None).pixels[0]


# -- reading the catalog ------------------------------------------------------------------------
def read_unit(state: ServerState, ref: str, segment: int) -> IndexedUnit:
    notices: list[str] = []
    with state.engine.open_catalog(notices) as catalog:
        units = catalog.file_units(ref)
        if not units:
            raise ApiError(404, f"not in the index: {ref}")
        found = [(unit, unit_id) for unit, unit_id in zip(units, catalog.unit_ids(ref), strict=False)
                 if unit.segment == segment]
        if not found:
            raise ApiError(404, f"{ref} has no segment {segment} (it has {_segments(units)})")
        unit, unit_id = found[0]
        return IndexedUnit(unit, catalog.indexers(), catalog.description_signals(),
                           catalog.unit_descriptions(unit_id), catalog.setting("protocol") or "fast",
                           notices)


def _segments(units: list[UnitRecord]) -> str:
    numbers = [u.segment for u in units]
    return f"segment {numbers[0]}" if len(numbers) == 1 else f"segments {numbers[0]}-{numbers[-1]}"


# -- the answer ---------------------------------------------------------------------------------
def evidence_answer(ref: str, indexed: IndexedUnit, info: VideoInfo, public=str) -> dict:
    unit = indexed.unit
    chosen = chosen_descriptions(indexed.descriptions)
    caption = (chosen.pop(CAPTION, None) or {}).get("text")
    notices = [public(n) for n in indexed.notices]
    signals = [text_signal(row, "caption", caption) if row.kind == "text"
               else visual_signal(ref, row, indexed, info, notices) for row in indexed.indexers]
    signals += [text_signal(IndexerRow(sig.signal, f"text#{sig.concept}", "", "text", sig.dim, 0, None), sig.concept,
                            (chosen.get(sig.concept) or {}).get("text")) for sig in indexed.description_signals]
    notices += check_recorded(unit, info, [s for s in signals if s.get("frames")])
    return {"path": ref, "segment": unit.segment, "start": round(unit.start, 3), "end": round(unit.end, 3),
            "signals": signals, "caption": caption,
            "descriptions": [{"concept": concept, **d} for concept, d in sorted(chosen.items())],
            "notices": notices}


def visual_signal(ref: str, row: IndexerRow, indexed: IndexedUnit, info: VideoInfo, notices: list[str]) -> dict:
    """The frames ``row``'s model saw of the unit: by its rule, else (one visual model only) as recorded."""
    unit = indexed.unit
    spec = frame_spec(row, indexed.protocol)
    if spec is not None:
        return frame_signal(ref, row, spec, unit_frames(info, stored_span(unit.segment, unit.start, unit.end,
                                                                          unit.boundary, info.fps), spec))
    only = [r.indexer for r in indexed.indexers if r.kind != "text"] == [row.indexer]
    picked = recorded_frames(unit, info, only)
    notices.append(f"{row.name}: its frame rule is not known here; "
                   + ("the frames recorded at indexing are shown" if picked else "no frames are shown"))
    return frame_signal(ref, row, None, picked)


def frame_signal(ref: str, row: IndexerRow, spec: FrameSpec | None, picked: list[tuple[int, float]]) -> dict:
    listed = picked if len(picked) <= MAX_LISTED else [picked[round(i * (len(picked) - 1) / (MAX_LISTED - 1))]
                                                        for i in range(MAX_LISTED)]
    shown = [{"time": round(time, 3), "index": index, "src": frame_url(ref, time)} for index, time in listed]
    sees = describe_sampling(spec, picked) if spec else f"{len(picked)} frames, as recorded at indexing"
    if len(listed) < len(picked):
        sees += f"; {len(listed)} of them listed"
    return {"signal": row.indexer, "name": row.name, "kind": row.kind, "frames": shown, "count": len(picked),
            "sees": sees}


def text_signal(row: IndexerRow, embeds: str, text: str | None) -> dict:
    what = "its caption" if embeds == "caption" else f"its {embeds} description"
    return {"signal": row.indexer, "name": row.name, "kind": "text", "frames": [], "embeds": embeds, "text": text,
            "sees": what if text else f"{what} (none for this unit)"}


def frame_url(ref: str, time: float) -> str:
    return f"/frame/{quote(ref)}?t={round(time, 3)}"


def chosen_descriptions(rows: list[Description]) -> dict[str, dict]:
    """concept -> {"text", "by"}: the description that stands for the unit, as ``Catalog.chosen_texts`` picks
    it (a file's own words first, else the latest readable answer; rows come oldest first)."""
    chosen: dict[str, Description] = {}
    for d in rows:
        if d.status != "ok" or not d.text:
            continue
        held = chosen.get(d.concept)
        if held is None or d.key == FILE_KEY or held.key != FILE_KEY:
            chosen[d.concept] = d
    return {concept: {"text": d.text, "by": d.key.model} for concept, d in chosen.items()}


# -- which frames ---------------------------------------------------------------------------------
def frame_spec(row: IndexerRow, protocol: str) -> FrameSpec | None:
    """The frame rule ``row``'s model sampled with, from its family's card for ``protocol`` and the catalog's
    frame count; None when the card names no rule this module can apply (a fixed-rate rule needs its rate)."""
    try:
        entry = INDEXERS.entry(row.name)
    except UnknownModelError:
        try:
            entry = INDEXERS.resolve(row.indexer).entry
        except UnknownModelError:
            return None
    card = entry.card.get(protocol) or entry.card.get("fast") or {}
    rule = card_rule(card.get("frames", ""))
    return FrameSpec(rule, max(1, row.frames or 1)) if rule else None


def card_rule(words: str) -> str | None:
    """The rule whose wording (``RULE_TEXT``) a card's "frames" line quotes; the longest wins, as one rule's
    wording may begin another's ("linspace" and "linspace-pad")."""
    quoted = [rule for rule in FRAME_RULES if RULE_TEXT[rule] in words]
    return max(quoted, key=lambda rule: len(RULE_TEXT[rule])) if quoted else None


def recorded_frames(unit: UnitRecord, info: VideoInfo, only_visual: bool) -> list[tuple[int, float]]:
    """The frames recorded with the unit at indexing: those of the model that saw the fewest, so they are the
    model's own only when it is the index's one visual model."""
    if not only_visual or info.fps <= 0:
        return []
    return [(int(round(t * info.fps)), t) for t in unit.frame_times]


def check_recorded(unit: UnitRecord, info: VideoInfo, signals: list[dict]) -> list[str]:
    """A notice when no signal's frames fall on the times recorded at indexing (the sparsest signal's): then the
    file, or its frame count or rate as read now, is not what was indexed."""
    if not unit.frame_times or not signals or info.fps <= 0:
        return []
    recorded = [round(t * info.fps) for t in unit.frame_times]
    if any([f["index"] for f in s["frames"]] == recorded for s in signals if s["count"] == len(s["frames"])):
        return []
    return [f"the frames shown are worked out from the file as it is now; the {len(recorded)} recorded at "
            f"indexing ({', '.join(f'{frame_time(info, i):.3f}' for i in recorded[:4])}"
            f"{', ...' if len(recorded) > 4 else ''} s) differ: the file may have changed since it was indexed"]
