"""Timed-line sources, in one registry: what writes a file's text lines (on-screen text, subtitles, speech).

A source either reads the frames the decode stage samples (``FRAMES``: an indexer of kind "lines", such as ``ocr``,
whose reads the run stores beside the file's vectors, ``frame_lines``) or runs as a pass of its own after embedding
(``PASS``: ``passes.subtitles``, ``passes.speech``).  Every source keeps its reads by the file's bytes with a
stamp, and one rule (``is_current``) says when a file's lines must be read again.

The sources a user asks for with ``-i`` (``-i ocr``, ``-i speech:<checkpoint>``) are remembered in one catalog
setting (``SETTING``), so later runs without ``-i`` go on reading new files with them; sources always on
(subtitles) are never asked for.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Mapping, Sequence

if TYPE_CHECKING:  # decode workers import the freshness rule with the stages: not the catalog's database
    from retrieval.store.catalog import Catalog

FRAMES, PASS = "frames", "pass"  # where a source reads: the decode stage's frames, or a pass after embedding
SETTING = "line_sources"  # catalog setting: JSON {source: [its specs asked for]} (an older index's two settings
# are moved into it by the catalog's migrations)


@dataclass(frozen=True)
class LineSource:
    """One kind of timed lines.  ``asks``: whether an ``-i`` spec names it (None: always on, never asked for);
    ``one_spec``: a spec asked for replaces the remembered one (one recogniser an index) instead of joining it."""

    name: str  # the lines' source, as the catalog stores it
    reads: str  # FRAMES or PASS
    asks: Callable[[str], bool] | None = None
    one_spec: bool = False


SOURCES: dict[str, LineSource] = {}


def register(source: LineSource) -> LineSource:
    if source.name in SOURCES:
        raise ValueError(f"line source {source.name!r} is registered twice")
    SOURCES[source.name] = source
    return source


def _asks_speech(spec: str) -> bool:
    return spec == "speech" or spec.startswith("speech:")


# the frame readers are told by their model's kind ("lines"), not their spec: ``remember`` takes them so
OCR = register(LineSource("ocr", FRAMES))
SUBTITLE = register(LineSource("subtitle", PASS))
SPEECH = register(LineSource("speech", PASS, asks=_asks_speech, one_spec=True))


def unstored_note(source: str, count: int, what: str = "line(s)") -> str:
    """The run's note on ``count`` lines of ``source`` the catalog could not take (text that is not valid Unicode,
    a time that is not a number): each is skipped alone, the rest of its file's lines stored."""
    return f"{source}: {count} {what} the catalog cannot store (not valid Unicode, or a time that is no number) skipped"


def is_current(stamps: Mapping[str, str], origin: str, stamp: str | None = None) -> bool:
    """The one freshness rule of timed lines: a file's read by ``origin`` is current, and not read again, when the
    catalog records it with ``stamp`` (``line_stamps`` of the file's bytes and source: origin -> stamp).

    The stamp says what the read depends on: a reader's model and settings, a sidecar's size:mtime, the version of
    the stream reading.  ``stamp`` None: any stamp (a recogniser whose stamp needs its weights loaded, so a run
    with nothing new to hear loads none); ``origin`` ending in ":" stands for every origin it begins
    (``stream:``: a file's text streams, read together)."""
    if origin.endswith(":"):
        return any(o.startswith(origin) and (stamp is None or s == stamp) for o, s in stamps.items())
    recorded = stamps.get(origin)
    return recorded is not None and (stamp is None or recorded == stamp)


def split_specs(specs: Sequence[str]) -> tuple[list[str], dict[str, str]]:
    """(the specs of the run's indexers, {pass source: the spec asked for}): the specs a pass-run source claims
    are split off, the last one of a source winning."""
    asked: dict[str, str] = {}
    rest = []
    for spec in specs:
        source = next((s for s in SOURCES.values() if s.asks is not None and s.asks(spec)), None)
        if source is None:
            rest.append(spec)
        else:
            asked[source.name] = spec
    return rest, asked


def remembered(catalog: Catalog) -> dict[str, list[str]]:
    """{source: the specs earlier runs asked for}, which a run without ``-i`` reads with again."""
    raw = catalog.setting(SETTING)
    if raw is None:
        return {}
    try:
        stored = json.loads(raw)
    except ValueError:
        return {}  # a setting damaged by hand: the next run naming a source writes it whole
    if not isinstance(stored, dict):
        return {}
    return {name: [s for s in specs if isinstance(s, str)] for name, specs in stored.items()
            if isinstance(name, str) and isinstance(specs, list)}


def asked_of(specs: Sequence[str], models: Sequence, passes: Mapping[str, str]) -> dict[str, list[str]]:
    """{source: its specs} a run asks for: the frame readers' among its indexers (``specs`` and their ``models``;
    a reader is told by its model's kind, "lines", and names its source) and the pass sources' (``split_specs``)."""
    asked: dict[str, list[str]] = {}
    for spec, model in zip(specs, models, strict=True):
        if getattr(model, "kind", None) == "lines":
            asked.setdefault(model.name, []).append(spec)
    return {**asked, **{name: [spec] for name, spec in passes.items()}}


def remember(catalog: Catalog, asked: Mapping[str, Sequence[str]]) -> None:
    """Add the specs this run asked for ({source: specs}) to the remembered ones: a ``one_spec`` source keeps
    the last one asked, the others keep every spec once.  Nothing asked: the setting is left as it is."""
    asked = {name: list(specs) for name, specs in asked.items() if specs}
    if not asked:
        return
    kept = remembered(catalog)
    for name, specs in asked.items():
        if name in SOURCES and SOURCES[name].one_spec:
            kept[name] = specs[-1:]
        else:
            kept[name] = [*kept.get(name, []), *(s for s in specs if s not in kept.get(name, []))]
    catalog.set_setting(SETTING, json.dumps(kept))


def spec_of(catalog: Catalog, source: str) -> str | None:
    """The one spec a ``one_spec`` source reads with in this index (the last asked for), if any."""
    specs = remembered(catalog).get(source) or []
    return specs[-1] if specs else None


def frame_reader_specs(catalog: Catalog) -> list[str]:
    """The specs of the frame readers earlier runs asked for (they are indexers of the decode stage)."""
    kept = remembered(catalog)
    return [spec for source in SOURCES.values() if source.reads == FRAMES for spec in kept.get(source.name, [])]
