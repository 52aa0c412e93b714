"""The indexing run: reader (scan + plan) -> executor (decode, embed) -> writer (catalog, FAISS).

The run plans a folder against the catalog and hands the work to an executor as ``FileJob``s.
An executor runs the two stages (``retrieval.pipeline.stages``) wherever it runs them: the local
one decodes in worker processes and embeds in this process (``local``), the Ray one does both
on a cluster (``ray_pipeline``).  Either yields one ``EmbeddedFile`` (or the decode failure) per
file, and the run commits each the same way, in one catalog transaction.  Then every registered pass runs
(``retrieval.pipeline.passes``: subtitles, speech, captions, descriptions, description vectors), each from
what is pending in the catalog, with its counts in the report.  FAISS indices are rebuilt from the catalog when
the run publishes.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Callable, Iterator, Protocol, Sequence

from indexers.base import Indexer
from retrieval.core.sampling import FrameSpec
from retrieval.core.segmentation import describe as describe_units
from retrieval.lmm.captioning import Describer
from retrieval.media.damaged import describe_gaps
from retrieval.media.frames import Span
from retrieval.media.scan import FoundFile, content_hash, find_videos
from retrieval.media.shots import choose_detector
from retrieval.pipeline import availability, concept_index, line_sources
from retrieval.pipeline.catalog_settings import (
    auto_shots,
    finish_resegmenting,
    resegmenting,
    settle_segments,
    stale_units,
)
from retrieval.pipeline.frame_lines import current_files, is_reader, store_reads
from retrieval.pipeline.passes.base import Counts, PassContext, run_pass
from retrieval.pipeline.passes.registry import registered, zero_counts
from retrieval.pipeline.plan import Plan, plan
from retrieval.pipeline.progress import Progress, silent
from retrieval.pipeline.settings import IndexSettings
from retrieval.pipeline.stages import (
    DecodedFile,
    DecodeJob,
    EmbeddedFile,
    FileJob,
    FileResult,
    is_transient,
    reason_of,
)
from retrieval.store.catalog import Catalog
from retrieval.store.catalog.records import FileRecord, FileState, IndexerRow, UnitRecord
from retrieval.store.publish import publish as publish_derived


@dataclass
class IndexReport:
    """What a run did.  ``failed`` lists every file that is not indexed after it, ``failed_earlier`` of
    them failed in an earlier run and were not retried (unchanged since); ``seconds`` is the whole run.
    ``passes``: each pass's counts (``passes.base.Counts``), by pass name; their fields read as the report's own
    (``report.speech_files``), and ``as_dict`` lists them flat beside the run's."""

    indexers: list[str]
    found: int = 0
    indexed: int = 0
    unchanged: int = 0
    forgotten: int = 0
    unavailable: int = 0  # indexed files not found whose folder is offline: kept, not searched (``availability``)
    units: int = 0
    frames: int = 0
    seconds: float = 0.0
    ocr_unstored: int = 0  # lines read on screen the catalog could not take: each skipped alone
    passes: dict[str, Counts] = field(default_factory=zero_counts)
    failed: list[tuple[str, str]] = field(default_factory=list)
    failed_earlier: int = 0
    excluded: int = 0  # files found that were removed from the index (`convis remove`): skipped, not failed
    notes: list[str] = field(default_factory=list)

    def pass_counts(self) -> dict:
        """Every pass's counts by report key, a key two passes count summed (captions from files and a captioner's)."""
        flat: dict = {}
        for counts in self.passes.values():
            for key, value in counts.as_dict().items():
                flat[key] = flat[key] + value if key in flat else value
        return flat

    def __getattr__(self, name: str):
        if name.startswith("_") or name == "passes":  # asked before __init__ set them
            raise AttributeError(name)
        flat = self.pass_counts()
        if name not in flat:
            raise AttributeError(f"{type(self).__name__} has no {name!r}")
        return flat[name]

    def as_dict(self) -> dict:
        out: dict = {}
        for f in fields(IndexReport):
            value = getattr(self, f.name)
            if f.name == "passes":
                out.update({key: _plain(v) for key, v in self.pass_counts().items()})
            elif f.name == "failed":
                out[f.name] = [{"path": p, "error": e} for p, e in value]
            else:
                out[f.name] = _plain(value)
        return out


def _plain(value):
    return round(value, 3) if isinstance(value, float) else value


class Executor(Protocol):
    """Where a run's files are decoded and embedded."""

    def embed(self, jobs: Sequence[FileJob], models: Sequence[Indexer]) -> Iterator[tuple[FileJob, FileResult]]:
        """Every job once, with its ``EmbeddedFile`` (vectors from ``models`` it needs) or its decode failure."""
        ...

    # optional: ``prepare() -> notes``, called once a run knows it has work, before it builds its models

    def finish(self, report: IndexReport) -> IndexReport:
        """Called once all that ``embed`` yielded is committed: the run's report with this executor's counts."""
        ...


Scan = tuple[list[FoundFile], list[tuple[str, str]]]  # what ``find_videos`` returns: files, unreadable entries


# -- the writer -------------------------------------------------------------------------------------
class IndexRun:
    """Plans a folder against the catalog, commits what the executor yields, publishes FAISS and snapshots.

    Indexers the catalog already knows may be handed in unbuilt (``pipeline.models.LazyIndexer``):
    they are only built when a file needs their vectors.
    """

    def __init__(self, catalog: Catalog, index_dir: Path, indexers: Sequence[Indexer], executor: Executor,
                 settings: IndexSettings = IndexSettings(), progress: Progress | None = None,
                 captioner: Describer | None = None, device: str | None = None):
        self.catalog, self.index_dir = catalog, Path(index_dir)
        self.captioner = captioner  # a video LMM that describes each unit once (``describe``), or None
        self.device = device  # where the passes' own models run (a speech recogniser)
        self.visual = [ix for ix in indexers if ix.kind != "text" and not is_reader(ix)]
        self.textual = [ix for ix in indexers if ix.kind == "text"]
        self.readers = [ix for ix in indexers if is_reader(ix)]  # on-screen text: lines, not vectors
        self.executor, self.settings = executor, settings
        self.progress = progress or silent
        self.report = IndexReport([ix.model_id for ix in indexers])
        self.segment_seconds, self.shots = settings.segment_seconds, settings.shots
        self._resegment_failed = False
        self._published = time.monotonic()

    def run(self, root: Path, scan: Scan | None = None) -> IndexReport:
        """Index ``root`` (``scan``: its ``find_videos`` result, when the caller has it already)."""
        started = time.perf_counter()
        self._settle_units()
        self._register()
        found, problems = scan if scan is not None else find_videos(root, skip=self.index_dir.resolve())
        self.report.found = len(found)
        found, problems = self._without_excluded(found, problems)
        reach = availability.settle(self.catalog, root, found, self.settings.prune)  # before the plan forgets
        self.report.unavailable = len(reach.unavailable)
        for text in reach.notes():
            self.note(text)
        jobs = self._plan(found)
        for rel, reason in problems:
            self._fail(FoundFile("", rel, 0, 0.0), reason)
        self.progress("start", {"total": len(jobs)})
        self._embed(jobs)
        if self.report.ocr_unstored:
            self.note(line_sources.unstored_note("ocr", self.report.ocr_unstored))
        self._passes(root)
        self._register()  # models built during the run: their rows say how they ran
        if resegmenting(self.catalog) and not self._resegment_failed:
            finish_resegmenting(self.catalog)
        self.publish()
        self.report.seconds = time.perf_counter() - started
        return self.executor.finish(self.report)

    def _without_excluded(self, found: list[FoundFile], problems: list[tuple[str, str]]) -> Scan:
        """The scan less the files removed from the index: they stay in the folder, so every run finds them."""
        excluded = set(self.catalog.excluded())
        kept = [f for f in found if f.rel not in excluded]
        self.report.excluded = len(found) - len(kept)
        return kept, [(rel, reason) for rel, reason in problems if rel not in excluded]

    def _settle_units(self) -> None:
        """How this run cuts units (an "auto" shot detector chosen now, once), said in a note for shot units."""
        asked, shots, why = self.settings.shots, None, "as this index records"
        if asked is not None:
            chosen, why = choose_detector(asked.detector)
            shots = auto_shots(self.catalog, asked, lambda: chosen)
            if shots.detector != chosen:
                why = "auto: the detector this index was cut with"
        self.segment_seconds, self.shots = settle_segments(self.catalog, self.settings.segment_seconds, shots)
        if self.shots is not None:
            self.note(f"{describe_units(None, self.shots)}: {why}")

    def publish(self) -> None:
        """Make the committed state visible to readers: everything derived from the catalog, its snapshot last."""
        publish_derived(self.catalog, self.index_dir)
        self._published = time.monotonic()

    def note(self, text: str) -> None:
        self.report.notes.append(text)
        self.progress("note", {"text": text})

    def _register(self) -> None:
        for ix in [*self.visual, *self.textual]:
            if getattr(ix, "built", True):  # an unbuilt one's row is in the catalog already, as it last ran
                self.catalog.register_indexer(IndexerRow(ix.model_id, ix.name, ix.source, ix.kind, ix.dim,
                                                         ix.frames_per_unit, None))
        concept_index.remember_conditioned(self.catalog, self.visual)

    def _embed(self, jobs: list[FileJob]) -> None:
        if not jobs:
            return  # nothing to decode: no worker is asked, no model is built
        needed = {m for job in jobs for m in job.indexers}
        framed = [*self.visual, *self.readers]
        for job, result in self.executor.embed(jobs, [ix for ix in framed if ix.model_id in needed]):
            self._write(job, result)
            if time.monotonic() - self._published > self.settings.publish_every:
                self.publish()

    def _plan(self, found: list[FoundFile]) -> list[FileJob]:
        known = self.catalog.file_states()
        indexed = {ix.model_id: self.catalog.indexed_with(ix.model_id) for ix in self.visual}
        # a line reader has "indexed" a file whose bytes hold its current read: the others lack it
        indexed |= {ix.model_id: current_files(self.catalog, ix, known) for ix in self.readers}
        complete = set.intersection(*indexed.values()) if indexed else set(known)
        todo = plan(found, known, complete, self._resegment(), self.settings.retry_failed, same_bytes)
        for f in todo.restamped:
            self.catalog.touch(f.rel, f.size, f.mtime, f.stat_key)
        self.report.unchanged = len(todo.unchanged)
        self.report.failed += [(f.rel, known[f.rel].error or "failed") for f in todo.failed]
        self.report.failed_earlier = len(todo.failed)
        self.report.forgotten = self.catalog.forget(todo.deleted)
        if todo.retry:
            self.note(f"{len(todo.retry)} file(s) that failed in an earlier run are tried again")
        if todo.resegment:
            self.note(f"{len(todo.resegment)} indexed file(s) get {describe_units(self.segment_seconds, self.shots)}; "
                      "each keeps its old units until its new ones are committed")
        decode = DecodeJob(FoundFile("", "", 0, 0.0), (), self.segment_seconds,
                           decode_device=self.settings.decode_device, shots=self.shots)
        return [self._with_stored_cut(job) for job in _jobs(todo, known, indexed, self._frame_specs, decode)]

    def _with_stored_cut(self, job: FileJob) -> FileJob:
        """A shot-cut file that only lacks some indexers' vectors is sampled at the units it has: cutting it again
        could find other shots (another detector version, TransNetV2 on another device) and its new vectors must
        pair with its stored units."""
        if job.decode.shots is None or not job.lacks_vectors:
            return job
        fps = self.catalog.file_fps(job.file.rel)
        cut = tuple(Span(u.segment, u.start, u.end, (round(u.start * fps), round(u.end * fps)), u.boundary,
                         u.confidence) for u in self.catalog.file_units(job.file.rel))
        return replace(job, decode=replace(job.decode, cut=cut)) if fps and cut else job

    def _resegment(self) -> set[str]:
        """Indexed files to cut into the run's units: all whose units differ, while the length is changing."""
        if not resegmenting(self.catalog):
            return set()
        return stale_units(self.catalog, self.segment_seconds, self.shots)

    def _frame_specs(self, indexers: set[str]) -> tuple[FrameSpec, ...]:
        # only asked once the plan has work, and what it asks builds the models: the executor gets ready now
        # (decode workers start), so that its start-up overlaps loading them and an idle run starts none
        prepare = getattr(self.executor, "prepare", None)
        for text in prepare() if prepare is not None else ():
            self.note(text)
        framed = [*self.visual, *self.readers]
        return tuple(dict.fromkeys(ix.frame_spec for ix in framed if ix.model_id in indexers))

    def _write(self, job: FileJob, result: FileResult) -> None:
        for text in getattr(result, "notices", ()):
            if text not in self.report.notes:
                self.note(text)  # e.g. decoding on the CPU because the GPU could not be used
        found = job.file
        if isinstance(result, BaseException):
            if not os.path.lexists(found.path):
                # gone since the scan: nothing to record; the next run forgets any old rows
                self._fail(FoundFile("", found.rel, 0, 0.0), "vanished during the run")
                self.progress("file", {"path": found.rel, "frames": 0, "ok": False})
                return
            self._fail_job(job, reason_of(result), transient=is_transient(result))
            return
        if job.unchanged(result.content_hash):
            self.catalog.touch(found.rel, found.size, found.mtime, found.stat_key)  # same bytes, new mtime
            self.report.unchanged += 1
            self.progress("file", {"path": found.rel, "frames": 0, "ok": True})
            return
        if result.error is not None:
            self._fail_job(job, f"embedding failed: {result.error}", transient=True)  # out of memory, mostly
            return
        try:
            frames = self._commit(job, result)
        except Exception as exc:  # as with a model error, this file is skipped and the run goes on
            self._fail_job(job, f"not stored: {reason_of(exc)}", transient=True)  # a full disk, mostly
            return
        # reported once committed, outside the handling above: a commit is final, and a callback's exception (its
        # caller stopping, a reader of its output gone) stops the run here without undoing it
        self.progress("file", {"path": found.rel, "frames": frames, "ok": True})

    def _commit(self, job: FileJob, done: EmbeddedFile) -> int:
        """Write one file's vectors (new file: all its rows; a file missing an indexer: those vectors); the
        frames it took."""
        found = job.file
        vectors = {m: v for m, v in done.vectors.items() if m in job.indexers}
        if job.lacks_vectors:
            if vectors:
                self.catalog.add_vectors(found.rel, vectors)
        else:
            self.catalog.commit_file(_file_record(found, done, job.decode.units_label), _unit_records(done), vectors)
        for reader in self.readers:
            if reader.model_id in job.indexers:
                self.report.ocr_unstored += store_reads(self.catalog, done.content_hash, reader,
                                                        done.reads.get(reader.model_id, []))
        frames = sum(len(f.indices) for fs in done.frames.values() for f in fs)
        self.report.indexed += 1
        self.report.units += len(done.spans)
        self.report.frames += frames
        return frames

    def _fail_job(self, job: FileJob, reason: str, transient: bool = False) -> None:
        """A planned file failed: recorded as failed, unless the catalog holds usable rows for it, which stay."""
        self._resegment_failed |= job.new_units
        self._fail(job.file if not job.keeps_rows else FoundFile("", job.file.rel, 0, 0.0), reason, transient)
        self.progress("file", {"path": job.file.rel, "frames": 0, "ok": False})

    def _fail(self, found: FoundFile, reason: str, transient: bool = False) -> None:
        """Report a failure; stored too when ``found`` names a file (entries we could not even stat have no
        ``path``: reported, not stored), ``transient`` when a later run should try it again."""
        self.report.failed.append((found.rel, reason))
        if found.path:
            self.catalog.record_failure(found.rel, found.size, found.mtime, reason, transient)

    def _passes(self, root: Path) -> None:
        """Every registered pass after embedding, in order, each with its counts in the report."""
        ctx = PassContext(self.catalog, self.index_dir, root, self.settings, self.visual, self.textual,
                          self.executor, self.captioner, self.device, self.note, self.progress, self.publish)
        for index_pass in registered():
            self.report.passes[index_pass.name] = run_pass(index_pass(), ctx)


def _jobs(todo: Plan, known: dict[str, FileState], indexed: dict[str, set[str]],
          specs_for: Callable[[set[str]], tuple[FrameSpec, ...]], decode: DecodeJob) -> list[FileJob]:
    """The plan's work as jobs, in its order: new and changed files need every indexer, so do files indexed
    with units of another length, an indexed file the indexers it lacks.  Each decode samples the frames of
    every indexer the run needs, which ``specs_for`` says (building them: only called when there is work);
    ``decode`` is every job's decode but for its file and frame specs."""
    every = tuple(indexed)
    work = [(f, every, {"known_hash": _known_hash(known, f.rel)}) for f in todo.new + todo.changed + todo.retry]
    work += [(f, every, {"new_units": True}) for f in todo.resegment]
    work += [(f, tuple(m for m in every if f.rel not in indexed[m]),
              {"known_hash": _known_hash(known, f.rel), "lacks_vectors": True}) for f in todo.missing_vectors]
    if not work:
        return []
    specs = specs_for({m for _, ids, _ in work for m in ids})
    return [FileJob(replace(decode, file=f, frame_specs=specs), ids, **flags) for f, ids, flags in work]


def same_bytes(found: FoundFile, stored_hash: str) -> bool:
    """Whether ``found`` still holds the bytes hashed as ``stored_hash`` (False when it cannot be read: the run then
    decodes it, and records why it fails)."""
    try:
        return content_hash(found.path) == stored_hash
    except OSError:
        return False


def _known_hash(known: dict[str, FileState], rel: str) -> str | None:
    state = known.get(rel)
    return state.content_hash if state is not None else None


def _file_record(found: FoundFile, d: DecodedFile, units_by: str) -> FileRecord:
    i = d.info
    return FileRecord(found.rel, found.size, found.mtime, d.content_hash, i.duration, i.fps, i.width,
                      i.height, i.frame_count, i.decoder, units_by, describe_gaps(i), i.codec, found.stat_key)


def _unit_records(d: DecodedFile) -> list[UnitRecord]:
    # the unit's frame times from the sparsest decode (an every-frame decode would list them all)
    sample = min(d.frames.values(), key=lambda units: sum(len(f.indices) for f in units))
    return [UnitRecord(s.segment, s.start, s.end, tuple(float(t) for t in f.timestamps), s.boundary, s.confidence)
            for s, f in zip(d.spans, sample, strict=False)]
