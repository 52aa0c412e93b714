"""The stages of an indexing run, as an executor runs them on one file.

``decode_job`` (in a worker: the sampled frames of one file, or of one window of its units, which
``unit_windows`` cuts) and ``embed_file`` (the models' vectors for them; ``join_windows`` makes a file of
its windows again). A ``FileJob`` is one file of a run: what an executor is asked to decode and embed;
each yields one ``EmbeddedFile``, or the decode failure (``FileResult``).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field, replace
from typing import Mapping, Sequence

import numpy as np

from indexers.base import Indexer
from retrieval.core.defaults import PARALLEL_SECONDS, WINDOW_FRAMES, WINDOWS_PER_WORKER
from retrieval.core.errors import one_line
from retrieval.core.pixels import DEFAULT_SHORT_SIDE
from retrieval.core.sampling import FrameSpec, as_spec
from retrieval.core.segmentation import ShotRule, segmentation_label
from retrieval.media.damaged import gap_ranges, merged
from retrieval.media.frames import (
    DecodeError,
    FileChanged,
    Frames,
    Span,
    VideoInfo,
    decode_notices,
    span_frame_indices,
)
from retrieval.media.scan import FoundFile, content_hash
from retrieval.media.shot_units import cut_shots
from retrieval.media.video_decoder import VideoDecoder
from retrieval.pipeline.frame_lines import FrameReads, is_reader, read_units


# -- the decode stage -------------------------------------------------------------------------------
@dataclass(frozen=True)
class DecodeJob:
    file: FoundFile
    frame_specs: tuple[FrameSpec, ...]  # one decode per distinct frame spec among the indexers
    segment_seconds: float | None
    short_side: int = DEFAULT_SHORT_SIDE
    # which window of the file's units to read (see ``unit_windows``); None: every unit at once
    window: int | None = None
    decode_device: str | None = None  # "cuda": decode on the GPU where torchcodec can (else CPU, said once)
    shots: ShotRule | None = None  # units follow shots (a resolved detector); segment_seconds is then unused
    cut: tuple[Span, ...] | None = None  # the file's shot units, as its first window found them
    parts: int = 1  # how many workers may decode this file at once (``unit_windows``)

    @property
    def timeout_factor(self) -> float:
        """How many decode time limits this task may take: finding a file's shots decodes every frame of it, in
        one task, where a window's task decodes about a window's worth."""
        return DETECTION_TIMEOUT_FACTOR if self.shots is not None and self.cut is None else 1.0

    @property
    def units_label(self) -> str:
        """How this job cuts the file's units, as the catalog records it."""
        return segmentation_label(self.segment_seconds, self.shots)

    @property
    def hashes(self) -> bool:
        """The file's content hash comes with its first window only: hashing it per window would read a long
        file once for each."""
        return not self.window


def unit_windows(info: VideoInfo, units: Sequence[Span], specs: Sequence[FrameSpec],
                 parts: int = 1) -> list[tuple[int, int]]:
    """Consecutive (first, stop) unit ranges of a file, each with at most ``WINDOW_FRAMES`` sampled frames.

    ``parts``: how many workers may decode this file at once. A file of ``PARALLEL_SECONDS`` or more is
    then cut into about ``WINDOWS_PER_WORKER`` windows a worker, so that they share it evenly; its first
    window is its first unit alone, since the others are handed out only once it is decoded (it is what
    finds how many there are). Each window's decode seeks to the keyframe before its first frame.
    """
    counts = [sum(len(span_frame_indices(info, span, spec)) for spec in specs) for span in units]
    total = sum(counts)
    parallel = parts > 1 and info.duration >= PARALLEL_SECONDS and len(units) > 2
    if total <= WINDOW_FRAMES and not parallel:
        return [(0, len(units))]
    if not parallel:
        return _windows_of(counts, 0, WINDOW_FRAMES)
    wanted = max(parts * WINDOWS_PER_WORKER, math.ceil((total - counts[0]) / WINDOW_FRAMES))
    return [(0, 1), *_even_windows(counts, 1, wanted)]


def _even_windows(counts: Sequence[int], start: int, wanted: int) -> list[tuple[int, int]]:
    """Units from ``start`` on in ``wanted`` consecutive windows of about equal frame counts (each unit goes to
    the window its middle frame falls in), none over ``WINDOW_FRAMES``."""
    rest = counts[start:]
    total, before, ids = max(1, sum(rest)), 0, []
    for count in rest:
        ids.append(min(wanted - 1, int(wanted * (before + count / 2) / total)))
        before += count
    windows, first = [], start
    for i in range(start + 1, len(counts) + 1):
        if i == len(counts) or ids[i - start] != ids[i - 1 - start]:
            windows += [(first + a, first + b) for a, b in _windows_of(counts[first:i], 0, WINDOW_FRAMES)]
            first = i
    return windows


def _windows_of(counts: Sequence[int], start: int, limit: int) -> list[tuple[int, int]]:
    """Units from ``start`` on, in consecutive windows of at most ``limit`` frames (a bigger unit alone)."""
    windows, first, total = [], start, 0
    for i in range(start, len(counts)):
        if i > first and total + counts[i] > limit:
            windows.append((first, i))
            first, total = i, 0
        total += counts[i]
    return [*windows, (first, len(counts))]


DECODER_MODULES = ("retrieval.pipeline.stages", "decord", "av")  # what a decode worker imports before its first file


@dataclass
class DecodedFile:
    info: VideoInfo
    content_hash: str
    spans: list[Span]
    frames: dict[FrameSpec, list[Frames]]  # frame spec -> one Frames per span
    # what decoding had to say in the worker that decoded it (a GPU fallback), for the run's report
    notices: tuple[str, ...] = field(default=(), kw_only=True)


@dataclass
class DecodedWindow(DecodedFile):
    """Some consecutive units of a file (``spans`` and ``frames`` are theirs); ``windows``: how many the
    file has in all."""

    window: int = 0
    windows: int = 1
    identity: tuple[int, ...] = ()  # the file's inode, size and times as it was read: each window must match
    cut: tuple[Span, ...] | None = None  # every shot unit of the file (first window): the later windows read them


CHANGE_RETRIES = 3  # decodes of a file that keeps being written before it is left for a later run


def decode_job(job: DecodeJob) -> DecodedFile:
    """Runs in a worker: sample the units of one file, or of its ``job.window`` (raises DecodeError with the reason).

    The hash recorded is of the bytes that were decoded: the file is hashed before it is decoded, and its
    identity (inode, size, change time) must be the same after, else it is decoded again; the change time
    moves with every write, even one that puts the modification time back.
    """
    said = len(decode_notices())  # each is said once a process: those said while decoding this file are its own
    for _ in range(CHANGE_RETRIES):
        before = _identity(job.file.path)
        digest = content_hash(job.file.path) if job.hashes else ""
        decoded = _decode(job, digest, before)
        if _identity(job.file.path) == before:
            decoded.notices = (*decode_notices()[said:], *_damage_note(job, decoded.info))
            return decoded
    raise FileChanged(f"the file changed while it was decoded, {CHANGE_RETRIES} times; a later run tries again")


def _damage_note(job: DecodeJob, info: VideoInfo) -> tuple[str, ...]:
    """What of a damaged file (of this window of it) could not be decoded, for the run's notes."""
    if not info.gaps:
        return ()
    return (f"{job.file.rel}: {gap_ranges(info)} could not be decoded; indexed from the rest",)


def _identity(path: str) -> tuple[int, ...]:
    st = os.stat(path)
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns


# A decode worker is one core: FFmpeg's own threads (slice threads on every core, PyAV's default) made a 720p
# H.264 decode 15% faster for 1.5 cores, so workers sharing a file's windows slowed each other down (2 workers:
# 1.6x one, against 1.9x with one thread each; `convis bench perf --sections scaling`).
WORKER_THREADS = 1

# Finding shots decodes the whole file in one task: at 300-400 frames/s on one core (bikes.mp4, 640x272, frames
# kept for sampling; larger frames decode slower) a 2-hour film at 25 fps takes 8 minutes or more, past the
# default 300 s a window may take; such a task gets ten limits.
DETECTION_TIMEOUT_FACTOR = 10.0

# what is decoded of a file when no indexer of the run looks at frames (captions only): one frame a unit,
# enough to learn the video's length and cut its units
UNITS_ONLY = as_spec(1)


def _decode(job: DecodeJob, digest: str, identity: tuple[int, ...]) -> DecodedFile:
    specs = job.frame_specs or (UNITS_ONLY,)
    cut, found = job.cut, None
    if job.shots is not None and cut is None:  # the file's first window: find its shots
        found = cut_shots(job.file.path, job.shots, specs, job.short_side, job.decode_device, threads=WORKER_THREADS)
        if found.frames is not None:  # sampled in the same decode: the whole file at once
            return DecodedFile(found.info, digest, found.units, found.frames)
        cut = tuple(found.units)
    decoder = VideoDecoder(short_side=job.short_side, device=job.decode_device, threads=WORKER_THREADS)
    frames: dict[FrameSpec, list[Frames]] = {}
    info, spans, windows = None, [], [0]

    def pick(info: VideoInfo, units: list[Span]) -> slice:
        if job.window is None:
            return slice(None)
        windows[:] = unit_windows(info, units, specs, job.parts)
        if job.window >= len(windows):  # fewer units than when its first window was read
            raise FileChanged("the video changed while it was indexed")
        return slice(*windows[job.window])

    for _ in range(2):
        known = decoder.damaged(job.file.path)
        for spec in specs:
            info, units = decoder.sample(job.file.path, spec, job.segment_seconds, pick, cut=cut)
            spans = [span for span, _ in units]
            frames[spec] = [f for _, f in units]
        # a frame spec that found the file damaged read only the units where frames decode: every spec reads those
        if len(specs) == 1 or decoder.damaged(job.file.path) == known:
            break
    if found is not None:  # the shot pass decoded the whole file: what of it does not decode
        info = replace(info, gaps=merged(found.info.gaps, info.gaps))
    if job.window is None:
        return DecodedFile(info, digest, spans, frames)
    return DecodedWindow(info, digest, spans, frames, job.window, len(windows), identity, cut)


# -- the embed stage --------------------------------------------------------------------------------
NO_PIXELS = np.zeros((0, 0, 0, 3), np.uint8)  # frames keep their times, not their pixels, after embedding


@dataclass
class EmbeddedFile(DecodedFile):
    """A decoded file after embedding: frames keep times and indices only; ``error`` = embedding failed."""

    vectors: dict[str, np.ndarray] = field(default_factory=dict)
    error: str | None = None
    reads: dict[str, FrameReads] = field(default_factory=dict)  # line reader id -> what it read off each frame


def embed_file(decoded: DecodedFile, models: Mapping[str, Indexer]) -> EmbeddedFile:
    """Runs where the models are: each model's unit vectors (by indexer id) for one decoded file, and what each
    line reader (``ocr``) read off its frames.

    A model error costs this file, never the run: it comes back as the file's ``error``.
    """
    try:
        # a window of a damaged file may have no unit that decodes: no vectors of it, from any model
        vectors = {model_id: np.asarray(m.embed_units([f.pixels for f in decoded.frames[m.frame_spec]])
                                        if decoded.spans else np.zeros((0, m.dim)), dtype=np.float32)
                   for model_id, m in models.items() if not is_reader(m)}
        reads = {model_id: read_units(m, decoded.frames[m.frame_spec]) if decoded.spans else []
                 for model_id, m in models.items() if is_reader(m)}
        error = None
    except Exception as exc:
        vectors, reads, error = {}, {}, reason_of(exc)
    frames = {spec: [Frames(NO_PIXELS, f.timestamps, f.indices) for f in fs] for spec, fs in decoded.frames.items()}
    return EmbeddedFile(decoded.info, decoded.content_hash, decoded.spans, frames, vectors, error, reads,
                        notices=decoded.notices)


def join_windows(parts: Sequence[EmbeddedFile]) -> EmbeddedFile:
    """One file from its embedded windows, in order: the first says what the file is (info, hash), and all say
    what of it does not decode; an embedding error in any window is the file's."""
    first = parts[0]
    error = next((p.error for p in parts if p.error is not None), None)
    frames = {spec: [f for p in parts for f in p.frames[spec]] for spec in first.frames}
    vectors = {} if error else {m: np.concatenate([p.vectors[m] for p in parts]) for m in first.vectors}
    notices = tuple(dict.fromkeys(n for p in parts for n in p.notices))
    info = replace(first.info, gaps=merged(*(p.info.gaps for p in parts)))
    reads = {} if error else {m: [r for p in parts for r in p.reads[m]] for m in first.reads}
    return EmbeddedFile(info, first.content_hash, [s for p in parts for s in p.spans], frames, vectors, error,
                        reads, notices=notices)


# -- what the run asks of an executor ---------------------------------------------------------------
@dataclass(frozen=True)
class FileJob:
    """One file of a run: decode it, then embed it with ``indexers``."""

    decode: DecodeJob
    indexers: tuple[str, ...]  # ids of the indexers it needs vectors from
    known_hash: str | None = None  # content hash of the bytes the catalog holds for it (None: embed them)
    lacks_vectors: bool = False  # indexed already and only some indexers' vectors missing: its rows stay
    new_units: bool = False  # indexed already with units of another length: its rows stay until replaced

    @property
    def file(self) -> FoundFile:
        return self.decode.file

    @property
    def keeps_rows(self) -> bool:
        """Whether the catalog holds usable rows for this file that a failure must not remove."""
        return self.lacks_vectors or self.new_units

    def unchanged(self, content_hash: str) -> bool:
        """The catalog holds these very bytes with every vector (only the mtime moved): nothing to embed."""
        return not self.lacks_vectors and self.known_hash == content_hash


FileResult = EmbeddedFile | BaseException  # a BaseException: why the file could not be decoded


def is_transient(exc: BaseException) -> bool:
    """Whether a decode failure may pass (timed out, crashed, out of memory, an OS error): a file that is not a
    video, or has no frames, fails the same way every time.  An exception may say so itself (``transient``)."""
    return bool(getattr(exc, "transient", not isinstance(exc, DecodeError)))


def reason_of(exc: BaseException) -> str:
    return one_line(exc, 500)  # the catalog keeps a fuller reason than a notice shows
