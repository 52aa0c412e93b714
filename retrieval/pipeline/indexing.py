"""The indexing pipeline: reader (scan) -> mapper (decode in workers, embed here) -> writer (catalog).

Decoding runs in a distributor (worker processes by default, each with its next file
already queued) while this process embeds the previous file, so decode and model work
overlap.  Each file is written in one catalog transaction; FAISS indices are rebuilt
from the catalog when the run publishes.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from indexers.base import Indexer
from retrieval.core.errors import one_line
from retrieval.core.sampling import FrameSpec
from retrieval.media.frames import DEFAULT_SHORT_SIDE, Frames, Span, VideoDecoder, VideoInfo
from retrieval.media.scan import FoundFile, content_hash, find_videos
from retrieval.pipeline.distribute import Distributor
from retrieval.pipeline.plan import plan
from retrieval.store.catalog import Catalog, FileRecord, IndexerRow, UnitRecord
from retrieval.store.vectors import EXACT_LIMIT, VectorIndex, choose_factory, index_path


class IndexSettingsError(ValueError):
    """The run asks for settings that contradict how the index was built."""


@dataclass(frozen=True)
class DecodeJob:
    file: FoundFile
    frame_specs: tuple[FrameSpec, ...]  # one decode per distinct frame spec among the indexers
    segment_seconds: float | None
    short_side: int = DEFAULT_SHORT_SIDE


DECODER_MODULES = ("retrieval.pipeline.indexing", "decord", "av")  # what a decode worker imports before its first file


@dataclass
class DecodedFile:
    info: VideoInfo
    content_hash: str
    spans: list[Span]
    frames: dict[FrameSpec, list[Frames]]  # frame spec -> one Frames per span


def decode_job(job: DecodeJob) -> DecodedFile:
    """Runs in a worker: sample every unit of one file (raises DecodeError with the reason)."""
    decoder = VideoDecoder(short_side=job.short_side)
    frames: dict[FrameSpec, list[Frames]] = {}
    info, spans = None, []
    for spec in job.frame_specs:
        info, units = decoder.sample(job.file.path, spec, job.segment_seconds)
        spans = [span for span, _ in units]
        frames[spec] = [f for _, f in units]
    return DecodedFile(info, content_hash(job.file.path), spans, frames)


@dataclass
class IndexReport:
    indexers: list[str]
    found: int = 0
    indexed: int = 0
    unchanged: int = 0
    forgotten: int = 0
    units: int = 0
    frames: int = 0
    seconds: float = 0.0
    failed: list[tuple[str, str]] = field(default_factory=list)
    captioned: int = 0

    def as_dict(self) -> dict:
        return {
            "indexers": self.indexers, "found": self.found, "indexed": self.indexed,
            "unchanged": self.unchanged, "forgotten": self.forgotten, "units": self.units,
            "frames": self.frames, "seconds": round(self.seconds, 3), "captioned": self.captioned,
            "failed": [{"path": p, "error": e} for p, e in self.failed],
        }


Progress = Callable[[str, dict], None]  # (event, data): "start" {total}, "file" {path, frames, ok}


SNAPSHOT_NAME = "snapshot.duckdb"
PUBLISH_EVERY = 60.0  # seconds between snapshots during a run, so queries see progress


class IndexRun:
    def __init__(self, catalog: Catalog, index_dir: Path, indexers: Sequence[Indexer], distributor: Distributor,
                 segment_seconds: float | None = None, captions: Path | None = None,
                 progress: Progress | None = None, publish_every: float = PUBLISH_EVERY):
        self.catalog, self.index_dir = catalog, index_dir
        self.visual = [ix for ix in indexers if ix.kind != "text"]
        self.textual = [ix for ix in indexers if ix.kind == "text"]
        self.distributor = distributor
        self.segment_seconds = segment_seconds
        self.captions = captions
        self.progress = progress or (lambda event, data: None)
        self.report = IndexReport([ix.model_id for ix in indexers])
        self._missing: set[str] = set()
        self.publish_every = publish_every
        self._published = time.monotonic()

    def run(self, root: Path) -> IndexReport:
        started = time.perf_counter()
        self._check_settings()
        for ix in [*self.visual, *self.textual]:
            self.catalog.register_indexer(IndexerRow(ix.model_id, ix.name, ix.source, ix.kind, ix.dim,
                                                     ix.frames_per_unit, None))
        found, problems = find_videos(root, skip=self.index_dir.resolve())
        self.report.found = len(found)
        work = self._plan(found)
        for rel, reason in problems:
            self._fail(FoundFile("", rel, 0, 0.0), reason)
        self.progress("start", {"total": len(work)})
        jobs = [DecodeJob(f, self._frame_specs(), self.segment_seconds) for f in work]
        for job, result in self.distributor.map(decode_job, jobs):
            self._write(job.file, result)
            if time.monotonic() - self._published > self.publish_every:
                self.publish()
        self._caption_pass()
        self.publish()
        self.report.seconds = time.perf_counter() - started
        return self.report

    def publish(self) -> None:
        """Make the committed state visible to readers: FAISS indices, then a catalog snapshot."""
        rebuild_indices(self.catalog, self.index_dir)
        self.catalog.snapshot(self.index_dir / SNAPSHOT_NAME)
        self._published = time.monotonic()

    def _check_settings(self) -> None:
        wanted = "" if not self.segment_seconds else f"{self.segment_seconds:g}"
        stored = self.catalog.setting("segment_seconds")
        if stored is None:
            self.catalog.set_setting("segment_seconds", wanted)
        elif stored != wanted:
            have = f"--segment {stored}s" if stored else "one unit per file"
            raise IndexSettingsError(
                f"this index was built with {have}; use the same setting or a new --index-dir"
            )

    def _plan(self, found: list[FoundFile]) -> list[FoundFile]:
        known = self.catalog.file_states()
        complete = set.intersection(*(self.catalog.indexed_with(ix.model_id) for ix in self.visual)) \
            if self.visual else set(known)
        todo = plan(found, known, complete)
        self.report.unchanged = len(todo.unchanged)
        self.report.forgotten = self.catalog.forget(todo.deleted)
        self._missing = {f.rel for f in todo.missing_vectors}
        return todo.work

    def _frame_specs(self) -> tuple[FrameSpec, ...]:
        return tuple(dict.fromkeys(ix.frame_spec for ix in self.visual))

    def _write(self, found: FoundFile, result) -> None:
        if isinstance(result, BaseException):
            if not os.path.lexists(found.path):
                # gone since the scan: nothing to record; the next run forgets any old rows
                self.report.failed.append((found.rel, "vanished during the run"))
                return
            self._fail(found, reason_of(result))
            return
        known = self.catalog.file_states().get(found.rel)
        if known is not None and known.content_hash == result.content_hash and found.rel not in self._missing:
            self.catalog.touch(found.rel, found.size, found.mtime)  # same bytes, new mtime
            self.report.unchanged += 1
            self.progress("file", {"path": found.rel, "frames": 0, "ok": True})
            return
        try:
            self._store(found, result)
        except Exception as exc:  # a model error on one file must not end the run
            self._fail(found, f"embedding failed: {reason_of(exc)}")

    def _store(self, found: FoundFile, decoded: DecodedFile) -> None:
        complete = {ix.model_id for ix in self.visual if found.rel in self.catalog.indexed_with(ix.model_id)} \
            if found.rel in self._missing else set()
        vectors = {
            ix.model_id: ix.embed_units([f.pixels for f in decoded.frames[ix.frame_spec]])
            for ix in self.visual if ix.model_id not in complete
        }
        self._commit(found, decoded, vectors)

    def _commit(self, found: FoundFile, decoded: DecodedFile, vectors: dict[str, np.ndarray]) -> None:
        """Write one file's vectors (new file: all its rows; a file missing an indexer: those vectors)."""
        if found.rel in self._missing:
            self.catalog.add_vectors(found.rel, vectors)
        else:
            self.catalog.commit_file(_file_record(found, decoded), _unit_records(decoded), vectors)
        frames = sum(len(f.indices) for fs in decoded.frames.values() for f in fs)
        self.report.indexed += 1
        self.report.units += len(decoded.spans)
        self.report.frames += frames
        self.progress("file", {"path": found.rel, "frames": frames, "ok": True})

    def _fail(self, found: FoundFile, reason: str) -> None:
        self.report.failed.append((found.rel, reason))
        # entries we could not even stat are reported, not stored; and a file that only
        # lacked one indexer's vectors keeps what it had: what was indexed stays indexed
        if found.path and found.rel not in self._missing:
            self.catalog.record_failure(found.rel, found.size, found.mtime, reason)
            self.progress("file", {"path": found.rel, "frames": 0, "ok": False})

    def _caption_pass(self) -> None:
        """Text indexers embed each indexed file's caption (``<stem>.txt`` in the captions folder)."""
        if not self.textual or self.captions is None:
            return
        for ix in self.textual:
            done = self.catalog.indexed_with(ix.model_id)
            for rel, state in self.catalog.file_states().items():
                caption = self.captions / f"{Path(rel).stem}.txt"
                if state.status != "ok" or rel in done or not caption.is_file():
                    continue
                units = len(self.catalog.unit_vectors(rel, self.visual[0].model_id)) if self.visual else 1
                text = caption.read_text(encoding="utf-8", errors="replace").strip()
                self.catalog.add_vectors(rel, {ix.model_id: np.repeat(ix.embed_texts([text]), max(units, 1), 0)})
                self.report.captioned += 1


PROTOCOL = "protocol"  # catalog setting: "fast" or "paper", fixed when the index is first built


def settle_protocol(catalog: Catalog, wanted: str | None) -> str:
    """The protocol this run indexes with: the one asked for, else the index's; one index, one protocol."""
    from indexers.base import PROTOCOLS

    stored = catalog.setting(PROTOCOL)
    if wanted is not None and wanted not in PROTOCOLS:
        raise IndexSettingsError(f"unknown protocol {wanted!r}; use one of {', '.join(PROTOCOLS)}")
    if stored is None:
        # an index built before protocols were recorded was built the fast way
        stored = "fast" if catalog.indexers() else (wanted or "fast")
        catalog.set_setting(PROTOCOL, stored)
    if wanted is not None and wanted != stored:
        raise IndexSettingsError(f"this index was built with --protocol {stored}; use the same protocol or a "
                                 "new --index-dir")
    return stored


FAISS_FACTORY, FAISS_PARAMS = "faiss_factory", "faiss_params"  # catalog settings; "" = automatic


def configure_faiss(catalog: Catalog, indexers: Sequence[Indexer], factory: str | None, params: str | None) -> None:
    """Record the FAISS factory string / search parameters this index uses ("auto": chosen by size).

    Checked against every indexer's dimension before it is stored, so a typo fails now, in one
    line, not after hours of embedding, and the previous setting stays.
    """
    wanted = {key: _setting(catalog, key, given) for key, given in ((FAISS_FACTORY, factory), (FAISS_PARAMS, params))}
    chosen_factory, chosen_params = wanted[FAISS_FACTORY] or None, wanted[FAISS_PARAMS] or None
    for ix in indexers:
        # with the automatic choice, parameters are for the ANN index it picks once the collection is large
        factory_for_check = chosen_factory or choose_factory(EXACT_LIMIT, ix.dim)
        try:
            VectorIndex.build(np.zeros(0, np.int64), np.zeros((0, ix.dim), np.float32), 0, factory_for_check,
                              chosen_params)
        except (RuntimeError, ValueError) as exc:
            setting = " ".join(filter(None, [chosen_factory or "auto", chosen_params]))
            raise IndexSettingsError(f"FAISS index {setting!r} does not work for {ix.model_id} ({ix.dim}-d): "
                                     f"{reason_of(exc)[:200]}") from None
    for key, value in wanted.items():
        catalog.set_setting(key, value)


def _setting(catalog: Catalog, key: str, given: str | None) -> str:
    """The value to store: the one given ("auto" -> "", automatic), else the one stored."""
    if given is None:
        return catalog.setting(key) or ""
    return "" if given.strip().lower() == "auto" else given.strip()


def build_index(catalog: Catalog, indexer: str) -> VectorIndex:
    """One indexer's FAISS index from the catalog: the configured factory, else the size-based choice.

    A configured index that cannot be built yet (an IVF needs more vectors than it has lists
    to train) is replaced by the automatic one until the collection is large enough.
    """
    ids, matrix = catalog.vectors(indexer)
    factory, params = catalog.setting(FAISS_FACTORY) or None, catalog.setting(FAISS_PARAMS) or None
    if factory or params:
        try:
            return VectorIndex.build(ids, matrix, catalog.generation, factory, params)
        except (RuntimeError, ValueError):
            pass
    return VectorIndex.build(ids, matrix, catalog.generation)


def rebuild_indices(catalog: Catalog, index_dir: Path) -> dict[str, VectorIndex]:
    """Derive every indexer's FAISS index from the catalog and replace the files atomically."""
    built = {}
    for row in catalog.indexers():
        index = build_index(catalog, row.indexer)
        index.save(index_path(index_dir, row.indexer))
        catalog.set_faiss_factory(row.indexer, index.factory)
        built[row.indexer] = index
    return built


def _file_record(found: FoundFile, d: DecodedFile) -> FileRecord:
    i = d.info
    return FileRecord(found.rel, found.size, found.mtime, d.content_hash, i.duration, i.fps, i.width,
                      i.height, i.frame_count, i.decoder)


def _unit_records(d: DecodedFile) -> list[UnitRecord]:
    # the unit's frame times from the sparsest decode (an every-frame decode would list them all)
    sample = min(d.frames.values(), key=lambda units: sum(len(f.indices) for f in units))
    return [UnitRecord(s.segment, s.start, s.end, tuple(float(t) for t in f.timestamps))
            for s, f in zip(d.spans, sample)]


def reason_of(exc: BaseException) -> str:
    return one_line(exc, 500)  # the catalog keeps a fuller reason than a notice shows
