"""The describe pass: a video LMM looks at each indexed unit once and its answers are stored.

reader (units without this model's descriptions) -> mapper (``retrieval.lmm.captioning``: decode the
family's frames, ask the caption and one request per concept) -> writer (one catalog transaction per
unit).  Answers are keyed by the unit's bytes and span, the model, its revision and the prompt version,
so a re-index, or the same bytes under another name, never asks again, and a run killed mid-way loses
at most the unit in flight.  A text indexer then embeds the generated captions as it embeds caption files.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from indexers.base import Indexer
from rerankers.prompts import describe as describe_prompt
from retrieval.core.errors import one_line
from retrieval.core.user_files import UserFileError, read_text
from retrieval.lmm.captioning import (
    Answer,
    Described,
    Describer,
    LocalDescriber,
    Mapper,
    Requests,
    Work,
    read_answer,
)
from retrieval.media.video_decoder import VideoDecoder
from retrieval.pipeline.guard import check_main_guard
from retrieval.pipeline.progress import Progress, silent
from retrieval.store.catalog import Catalog
from retrieval.store.catalog.records import FILE_KEY, DescriberKey, Description, UnitRow

FILE_MAX_CHARS = 20_000  # a caption file may be long (released captions run to 5,000 characters); not a book
MODEL_CALLS_PER_UNIT = len(describe_prompt.DESCRIBE_KEYS)  # the caption and one request per concept


def describer_key(model: Describer) -> DescriberKey:
    return DescriberKey(model.model_id, model.revision, model.describe_version)


@dataclass
class DescribeCounts:
    described: int = 0  # units whose answers were stored
    calls: int = 0  # model calls made
    unreadable: int = 0  # answers stored as unreadable
    failed: int = 0  # units left for a later run (decode or model error)
    seconds: float = 0.0  # time spent asking the model

    @property
    def per_second(self) -> float:
        return captions_per_second(self.calls, self.seconds) or 0.0


def captions_per_second(calls: int, seconds: float) -> float | None:
    """Model answers a second (None before any time was spent): what reports and progress bars show."""
    return round(calls / seconds, 3) if seconds > 0 else None


Note = Callable[[str], None]


class DescribePass:
    """Describe every unit of ``catalog`` that lacks this model's answers: reader (the units and the requests
    each lacks) -> mapper (the model, here or on Ray actors) -> writer (one transaction a unit)."""

    def __init__(self, catalog: Catalog, root: Path, model: Describer, note: Note,
                 decoder: VideoDecoder | None = None, progress: Progress | None = None,
                 requests: Requests | None = None, mapper: Mapper | None = None):
        """``model``: whose answers (its id, revision and frames key them); ``note``: lines for the run's report;
        ``progress``: events as the pass goes (a progress bar); ``requests``: what to ask of each unit (default:
        the caption and one request per ConViS concept); ``mapper``: who asks (default: this process)."""
        self.catalog, self.model, self.note = catalog, model, note
        self.progress = progress or silent
        self.requests = requests if requests is not None else describe_prompt.describe_requests(model.caption_tokens)
        self.key = describer_key(model)
        if mapper is None:
            mapper = LocalDescriber(model, root, decoder)
            if mapper.own_workers:
                check_main_guard()  # its decode workers re-import the main script
        self.mapper = mapper
        self.counts = DescribeCounts()

    def pending(self) -> list[UnitRow]:
        """The units this model has not described (all its answers), one per distinct bytes and span."""
        return self.catalog.undescribed_units(self.key, list(self.requests))

    def run(self, units: list[UnitRow] | None = None) -> DescribeCounts:
        """Describe ``units`` (default: every pending one)."""
        units = self.pending() if units is None else units
        if not units:
            return self.counts
        self.note(f"describing {len(units)} unit(s) with {self.model.model_id} "
                  f"({len(self.requests)} model call(s) each)")
        self.progress("describe", {"total": len(units)})
        failures: list[str] = []
        for done in self.mapper(self._work(units)):
            reason = self._write(done)
            if reason is not None:
                failures.append(f"{done.unit.path} {done.unit.start:g}-{done.unit.end:g} s: {reason}")
            self.progress("described", {"calls": done.calls, "seconds": done.seconds})
        self._report(failures)
        return self.counts

    def _work(self, units: list[UnitRow]) -> Work:
        """Each unit with the requests it lacks: an answer is never asked for twice."""
        work = []
        for unit in units:
            have = {d.concept for d in self.catalog.unit_descriptions(unit.unit_id, self.key)}
            work.append((unit, {k: r for k, r in self.requests.items() if k not in have}))
        return work

    def _write(self, done: Described) -> str | None:
        """Store one unit's answers together; the reason when there are none."""
        self.counts.calls += done.calls
        self.counts.seconds += done.seconds
        if done.answers is None:
            self.counts.failed += 1
            return done.reason
        unit = done.unit
        self.catalog.write_descriptions([
            Description(unit.content_hash, unit.start, unit.end, concept, self.key, a.text, a.status, a.error)
            for concept, a in done.answers.items()])
        self.counts.described += 1
        self.counts.unreadable += sum(a.status != "ok" for a in done.answers.values())
        return None

    def _report(self, failures: list[str]) -> None:
        c = self.counts
        self.note(f"described {c.described} unit(s): {c.calls} model calls, {c.per_second:.2f} captions/s"
                  + (f", {c.unreadable} answer(s) unreadable" if c.unreadable else ""))
        if failures:
            self.note(f"{len(failures)} unit(s) not described, left for a later run: {failures[0]}"
                      + (f" (and {len(failures) - 1} more)" if len(failures) > 1 else ""))


def embed_generated_captions(catalog: Catalog, key: DescriberKey, indexers: Sequence[Indexer]) -> int:
    """Text indexers embed each unit's generated caption, for files they hold no vectors of (caption files,
    embedded before, keep theirs). A file with a unit lacking a readable caption is left out. Files embedded."""
    embedded = 0
    for ix in indexers:
        done = catalog.indexed_with(ix.model_id)
        for rel, state in catalog.file_states().items():
            if state.status != "ok" or rel in done:
                continue
            captions = catalog.file_descriptions(rel, describe_prompt.CAPTION, key)
            if not captions or any(c is None or c.status != "ok" for c in captions):
                continue
            matrix = np.asarray(ix.embed_texts([c.text for c in captions]), dtype=np.float32)
            catalog.add_vectors(rel, {ix.model_id: matrix})
            embedded += 1
    return embedded


def store_concept_files(catalog: Catalog, captions: Path) -> int:
    """Text files of the captions folder become descriptions of every unit of their video (model "file"):
    ``<stem>.txt`` its caption, ``<stem>.<concept>.txt`` that concept's description; a file whose text changed
    replaces the old one. Returns the videos with a file stored."""
    stored = 0
    for rel, state in catalog.file_states().items():
        if state.status != "ok" or not state.content_hash:
            continue
        rows = []
        for concept, source in _text_files(captions, Path(rel).stem):
            if source.is_file():
                rows += _file_rows(catalog, rel, state.content_hash, concept, source)
        if rows:
            catalog.write_descriptions(rows)
            stored += 1
    return stored


def _text_files(captions: Path, stem: str) -> list[tuple[str, Path]]:
    """(concept key, file) of every text file a video may have in the captions folder."""
    return [(describe_prompt.CAPTION, captions / f"{stem}.txt"),
            *((concept, captions / f"{stem}.{concept}.txt") for concept in describe_prompt.CONCEPT_REQUESTS)]


def _file_rows(catalog: Catalog, rel: str, content_hash: str, concept: str, source: Path) -> list[Description]:
    """The rows ``source`` gives each unit of ``rel``, unless they are stored already as they are."""
    try:
        answer = read_answer(read_text(source, "description file", errors="replace"), FILE_MAX_CHARS)
    except UserFileError as exc:  # unreadable or too large: said in the row, never a crash
        answer = Answer(None, "unreadable", one_line(exc, 200))
    spans = [(u.start, u.end) for u in catalog.file_units(rel)]
    known = catalog.file_descriptions(rel, concept, FILE_KEY)
    if known and all(d is not None and (d.text, d.status, d.error) == (answer.text, answer.status, answer.error)
                     for d in known):
        return []
    return [Description(content_hash, start, end, concept, FILE_KEY, answer.text, answer.status, answer.error)
            for start, end in spans]
