"""Decode sampled frames of a video: PyAV first, decord as fallback; torchcodec first when decoding on a GPU.

Only the frames a unit needs are decoded (seek + decode up to each target), and
they are resized inside the decoder, so memory depends on the sample count and
the output size, never on the stream's length or resolution.
"""

from __future__ import annotations

import bisect
import importlib
import logging
import math
import os
import re
import sys
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Protocol, Sequence

import numpy as np

from retrieval.core.errors import ConvisError, one_line
from retrieval.core.pixels import DEFAULT_SHORT_SIDE, DecoderScaled, SizeError, scaled_size
from retrieval.core.sampling import FrameSpec, as_spec

# An every-frame spec (the paper protocol) holds a unit's frames at once; past this many (5 minutes
# at 30 fps, about 1.4 GB of 224-px frames) the unit must be split with --segment instead.
EVERY_FRAME_LIMIT = 9000


class DecodeError(ConvisError):
    """The file could not be decoded as a video; the message is the user-facing reason."""

    exit_code, http_status = 2, 400


class SpanError(DecodeError):
    """A time range with nothing in it: it starts at or past the end of the video (or of the range)."""

    def __init__(self, start: float, stop: float, duration: float):
        super().__init__(f"empty time range {start:g}-{stop:g} s (video is {duration:.1f} s)")
        self.start, self.stop, self.duration = start, stop, duration


class FileChanged(DecodeError):
    """The file was written while it was being read: what was read is of no one version; a later try may work."""

    transient = True


@dataclass(frozen=True)
class VideoInfo:
    frame_count: int
    fps: float
    duration: float  # seconds
    width: int  # as displayed (after any rotation the container asks for)
    height: int
    decoder: str
    rotation: int = 0  # degrees counter-clockwise the decoded picture must turn (PyAV reports, decord applies)


@dataclass(frozen=True)
class Frames:
    """Sampled frames of one unit: (T, H, W, 3) uint8 RGB and their presentation times."""

    pixels: np.ndarray
    timestamps: np.ndarray  # seconds, shape (T,)
    indices: tuple[int, ...]  # frame numbers in the stream


@dataclass(frozen=True)
class Span:
    """A retrievable unit of a video: the whole file, a fixed-length segment or a shot.

    A shot knows its frames exactly (``frames``: first, stop), where a time range is rounded to frames;
    ``boundary`` says what starts it ("cut": a detected cut, with the detector's ``confidence``; "split": a
    long shot split at the longest unit length; "start": the video's start); None for fixed units.
    """

    segment: int
    start: float
    end: float
    frames: tuple[int, int] | None = None
    boundary: str | None = None
    confidence: float | None = None


def output_size(width: int, height: int, short_side: int = DEFAULT_SHORT_SIDE) -> tuple[int, int]:
    """(width, height) after scaling the short side to ``short_side`` (never upscaling)."""
    try:
        return scaled_size(width, height, short_side)
    except SizeError as exc:
        raise DecodeError(str(exc)) from None


def spans(duration: float, segment_seconds: float | None) -> list[Span]:
    """Units of a video: one for the whole file, or consecutive fixed-length segments.

    A trailing piece shorter than half a segment is merged into the previous one so
    no unit is a sliver.
    """
    if not segment_seconds or duration <= segment_seconds:
        return [Span(0, 0.0, duration)]
    count = max(1, int(duration // segment_seconds))
    if duration - count * segment_seconds >= segment_seconds / 2:
        count += 1
    bounds = [i * segment_seconds for i in range(count)] + [duration]
    return [Span(i, bounds[i], bounds[i + 1]) for i in range(count)]


def span_frame_indices(info: VideoInfo, span: Span, spec: FrameSpec | int) -> list[int]:
    """Frame numbers to decode for one unit: the spec's rule applied to the frames inside the span."""
    if span.frames is not None:  # clamped: another decoder may count a frame or two fewer than the one that cut
        first = min(span.frames[0], info.frame_count - 1)
        last = max(first + 1, min(info.frame_count, span.frames[1]))
        return [first + i for i in as_spec(spec).indices(last - first, info.fps)]
    first = min(info.frame_count - 1, int(math.floor(span.start * info.fps)))
    # a unit that runs to the end has every remaining frame: end * fps undercounts variable-rate clips
    end = info.frame_count if span.end >= info.duration else int(math.ceil(span.end * info.fps))
    last = min(info.frame_count, max(first + 1, end))
    local = as_spec(spec).indices(last - first, info.fps)
    return [first + i for i in local]


class Backend(Protocol):
    name: str

    def probe(self, path: Path) -> VideoInfo: ...

    def read(self, path: Path, info: VideoInfo, indices: Sequence[int], resize) -> Frames: ...


@contextmanager
def _native_stderr_muted():
    """decord's C++ layer logs "ERROR opening ..." to stderr, then raises the same error, which the caller reports
    as one line; muted at the file descriptor, for the moment of opening (another thread's line then is lost)."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 2)
            yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


class DecordBackend:
    name = "decord"

    def __init__(self) -> None:
        import decord  # fail early so the caller can fall back

        # corrupt-slice chatter from libavcodec is not actionable; real failures raise
        decord.logging.set_level(decord.logging.QUIET)

    def _open(self, path: Path, size: tuple[int, int] | None = None):
        import decord

        # num_threads=1: decord's threaded decoding corrupts VP9 frames (dmlc/decord#246)
        kwargs = {"width": size[0], "height": size[1]} if size else {}
        with _native_stderr_muted():
            return decord.VideoReader(str(path), ctx=decord.cpu(0), num_threads=1, **kwargs)

    def probe(self, path: Path) -> VideoInfo:
        reader = self._open(path)
        height, width = reader[0].shape[:2] if len(reader) else (0, 0)
        count, fps = len(reader), float(reader.get_avg_fps())
        if count <= 0:
            raise DecodeError("video stream has no frames")
        duration = float(reader.get_frame_timestamp(count - 1)[1]) if count else 0.0
        return VideoInfo(count, fps, duration, int(width), int(height), self.name)

    def read(self, path: Path, info: VideoInfo, indices: Sequence[int], resize) -> Frames:
        unique = sorted(set(indices))
        if resize.in_decoder:
            reader = self._open(path, resize.decoder_size(info.width, info.height))
            batch = reader.get_batch(unique).asnumpy()
        else:  # full size, one frame at a time, each resized as soon as it is decoded
            reader = self._open(path)
            # one by one: decord's batches of full-size frames cost far more memory than the frames
            batch = np.stack([resize.apply(reader[i].asnumpy()) for i in unique])
        times = reader.get_frame_timestamp(unique)[:, 0]
        return _reorder(unique, batch, np.asarray(times, dtype=np.float64), indices)


class PyAVBackend:
    """``threads``: FFmpeg's decoding threads (None: its own choice, slice threads on every core)."""

    name = "pyav"

    def __init__(self, threads: int | None = None) -> None:
        import av

        av.logging.set_level(av.logging.PANIC)
        self.threads = threads

    def probe(self, path: Path) -> VideoInfo:
        import av

        with av.open(str(path)) as container:
            if not container.streams.video:
                raise DecodeError("no video stream (audio-only or not a video)")
            stream = container.streams.video[0]
            fps = float(stream.average_rate or stream.guessed_rate or 0) or 25.0
            duration = _stream_duration(container, stream)
            count = int(stream.frames or 0) or int(round(duration * fps))
            width, height = stream.codec_context.width, stream.codec_context.height
            rotation = _first_frame_rotation(container, stream)
        if count <= 0:
            raise DecodeError("video stream has no frames")
        if rotation in (90, 270):
            width, height = height, width
        return VideoInfo(count, fps, duration or count / fps, width, height, self.name, rotation)

    def read(self, path: Path, info: VideoInfo, indices: Sequence[int], resize) -> Frames:
        import av

        unique = sorted(set(indices))
        small = frame_converter(info, resize)
        with av.open(str(path)) as container:
            stream = container.streams.video[0]
            frame_times, keyframes = _packet_times(container, stream, upto=unique[-1])
            seekable = container.format.name.split(",")[0] not in INEXACT_SEEK_FORMATS
        # times are the stream's own, which need not start at 0 (MPEG-TS starts at 1.4 s, often); the
        # times recorded count from its first frame, as players show them
        origin = _start_time(stream)
        # frame numbers are positions in presentation order: exact with the packets' times
        # (variable frame rate too), else the nominal i / fps
        exact = frame_times is not None and len(frame_times) > unique[-1]
        targets = [frame_times[i] if exact else origin + i / info.fps for i in unique]
        early = 1e-6 if exact else 0.5 / info.fps
        with av.open(str(path)) as container:  # afresh: demuxing the packets' times moved it on
            stream = container.streams.video[0]
            if self.threads:
                stream.codec_context.thread_count = self.threads
            # where seeking lands after its target, only decoding from the start finds each frame
            grabbed = _grab_frames(container, stream, targets, early, keyframes if seekable else [], small,
                                   exact, seek=seekable)
        grabbed = _fill_missing(grabbed)
        pixels = np.stack([image for image, _ in grabbed])
        times = np.array([float(t if t is not None else target) - origin for (_, t), target in zip(grabbed, targets)])
        return _reorder(unique, pixels, times, indices)


def _start_time(stream) -> float:
    return float(stream.start_time * stream.time_base) if stream.start_time and stream.time_base else 0.0


def frame_converter(info: VideoInfo, resize) -> Callable:
    """frame -> (upright RGB array at the policy's size, its time), applied as soon as it is decoded."""
    turns = info.rotation // 90
    if resize.in_decoder:
        size = resize.decoder_size(info.width, info.height)
        coded = (size[1], size[0]) if turns % 2 else size  # scale in the coded orientation, then turn

        def small(frame) -> tuple[np.ndarray, float | None]:
            # a held full-size 4K frame costs 12 MB, this one 0.3 MB
            return np.rot90(frame.to_ndarray(width=coded[0], height=coded[1], format="rgb24"), turns), frame.time
        return small

    def resized(frame) -> tuple[np.ndarray, float | None]:
        return resize.apply(np.rot90(frame.to_ndarray(format="rgb24"), turns)), frame.time
    return resized


def _stream_duration(container, stream) -> float:
    if stream.duration and stream.time_base:
        return float(stream.duration * stream.time_base)
    if container.duration:
        return container.duration / 1_000_000
    return 0.0


def _first_frame_rotation(container, stream) -> int:
    """The display rotation (0, 90, 180, 270) the container's display matrix asks for."""
    try:
        frame = next(container.decode(stream))
    except (StopIteration, av_errors()):
        return 0
    return int(round((getattr(frame, "rotation", 0) or 0) / 90)) % 4 * 90


def av_errors() -> type[BaseException]:
    import av

    return av.error.FFmpegError


def _grab_frames(container, stream, targets: Sequence[float], early: float, keyframes: list[float] | None,
                 keep: Callable, exact: bool = False, seek: bool = True) -> list:
    """``keep(frame)`` of the frame at each target time (ascending), in one forward pass.

    A frame up to ``early`` seconds before a target counts as at it. A seek restarts decoding at
    the keyframe before its target; when that keyframe is not past the frame already decoded,
    going on decoding reaches the target for less work, so the pass seeks only across keyframes
    (short clips often have one or two: then it never re-decodes). ``exact``: the targets are the
    stream's own frame times, so the frame with that very time is wanted (see ``_Decoded``). Without
    ``seek``, one pass from the container's start (a freshly opened one).
    """
    grabbed, last = [], None
    decoded = None if seek else _Decoded(container.decode(stream))
    for target in targets:
        if seek and (last is None or last.time is None or _keyframe_between(keyframes, last.time, target)):
            container.seek(max(0, int(target / stream.time_base)), stream=stream, backward=True, any_frame=False)
            decoded = _Decoded(container.decode(stream))
        frame = decoded.take(target, early, exact)
        grabbed.append(None if frame is None else keep(frame))
        last = frame if frame is not None else last
    return grabbed


class _Decoded:
    """Frames decoded ahead of their use.

    A damaged stream can make the decoder hand frames out of order (box.mp4 among the examples:
    0.0, 0.101, 0.067, ...), so the first frame past a target is not always the target: when the
    target's exact time is known, up to ``REORDER`` frames past it are decoded looking for it.
    """

    REORDER = 4

    def __init__(self, frames):
        self.frames, self.waiting, self.last = iter(frames), [], None

    def take(self, target: float, early: float, exact: bool):
        earliest = target - early
        self.waiting = [f for f in self.waiting if f.time is None or f.time >= earliest]
        while not self._settled(target, earliest, exact):
            frame = next(self.frames, None)
            if frame is None:
                break
            self.last = frame
            if frame.time is None or frame.time >= earliest:
                self.waiting.append(frame)
        return self._choose(target, earliest, exact)

    def _settled(self, target: float, earliest: float, exact: bool) -> bool:
        if any(f.time is None for f in self.waiting) or (exact and self._exact(target)):
            return True
        later = [f for f in self.waiting if f.time >= earliest]
        return len(later) > self.REORDER if exact else bool(later)

    def _exact(self, target: float):
        return next((f for f in self.waiting if f.time is not None and abs(f.time - target) < 1e-6), None)

    def _choose(self, target: float, earliest: float, exact: bool):
        found = (self._exact(target) if exact else None) or next((f for f in self.waiting if f.time is None), None)
        if found is None and self.waiting:
            found = min(self.waiting, key=lambda f: f.time)
        return found if found is not None else self.last  # past the end: the final frame stands in


# Packets demuxed past the last wanted frame: presentation order differs from decoding order by at most the
# B-frame reordering depth (H.264 allows 16), so the first N frame times are known once N + this many are read.
REORDER_SLACK = 64


def _packet_times(container, stream, upto: int | None = None) -> tuple[list[float] | None, list[float] | None]:
    """Presentation times of every frame (up to frame ``upto``, and a few past it) and of the keyframes among
    them, from the packets (no decoding): a window early in a long file does not read the file to its end.

    None where unknown: a packet without a time, or a damaged index (then seek for every target,
    as a decoder without an index must).
    """
    frames, keys = [], []
    try:
        for packet in container.demux(stream):
            if upto is not None and len(frames) > upto + REORDER_SLACK:
                break
            if packet.size == 0:
                continue  # the demuxer's end-of-stream marker
            if packet.pts is None:
                return None, None
            time = float(packet.pts * stream.time_base)
            frames.append(time)
            if packet.is_keyframe:
                keys.append(time)
    except av_errors():
        return None, None
    return sorted(frames), sorted(keys)


def _keyframe_between(keyframes: list[float] | None, after: float, target: float) -> bool:
    """Is there a keyframe in (after, target]?  Unknown keyframes: assume so (always seek)."""
    if keyframes is None:
        return True
    return bisect.bisect_right(keyframes, target) > bisect.bisect_right(keyframes, after)


def _fill_missing(frames: list):
    """A target past the stream's end yields None; repeat the nearest earlier frame (reference padding)."""
    if all(f is None for f in frames):
        raise DecodeError("no frame could be decoded")
    out, previous = [], next(f for f in frames if f is not None)
    for frame in frames:
        previous = frame if frame is not None else previous
        out.append(previous)
    return out


def _reorder(unique: list[int], pixels: np.ndarray, times: np.ndarray, wanted: Sequence[int]) -> Frames:
    """Expand decoded unique frames back to the requested order (padding repeats frames)."""
    pos = {idx: i for i, idx in enumerate(unique)}
    order = [pos[i] for i in wanted]
    return Frames(np.ascontiguousarray(pixels[order]), times[order], tuple(wanted))


class BackendUnavailable(ConvisError, ImportError):
    """A decoder is installed but cannot load (torchcodec without its FFmpeg libraries, or with ones it does not
    support)."""

    exit_code, http_status = 1, 500
    label = "internal error"


_NOTICES: list[str] = []


def notice(text: str) -> None:
    """Say ``text`` once in this process: logged as a warning (on stderr where logging is not set up) and kept
    for ``decode_notices``."""
    if text not in _NOTICES:
        _NOTICES.append(text)
        logging.getLogger("retrieval.media").warning(text)


def decode_notices() -> list[str]:
    """What decoding has had to say in this process (a GPU fallback, a decoder that cannot load), each once."""
    return list(_NOTICES)


def _torchcodec(device: str | None = None, threads: int = 1) -> Backend:
    """A ``retrieval.media.torchcodec_backend.TorchCodecBackend``: that module builds on this one (its types and
    errors), so it is found by name, as a plugin, and imported only when a backend is made (it imports neither
    torch nor torchcodec itself; making the backend does)."""
    return importlib.import_module("retrieval.media.torchcodec_backend").TorchCodecBackend(device=device,
                                                                                           threads=threads)


_torchcodec.name = "torchcodec"  # as the backend classes say theirs


def _available_backends() -> list[Callable[..., Backend]]:
    return [DecordBackend, PyAVBackend, _torchcodec]


# The CPU's default order, by measurement (docs/performance.md, "Decoders"): PyAV on one thread decoded the
# 10-minute 720p file faster than decord (whose reader keeps a second thread busy: 1.5 cores for one decode), so
# decode workers sharing a long file scale with PyAV and not with decord; decord reads what PyAV cannot.
# torchcodec decodes no faster on the CPU, and loading it costs a decode process torch (seconds, and 0.7 GB
# resident), so it is used on the CPU only when named.  Decoding on a GPU (``device="cuda"``) puts it first.
CPU_BACKENDS = ("pyav", "decord")
GPU_BACKENDS = ("torchcodec", "pyav", "decord")


def default_backends(device: str | None = None) -> tuple[str, ...]:
    return GPU_BACKENDS if _on_gpu(device) else CPU_BACKENDS


def _on_gpu(device: str | None) -> bool:
    return bool(device) and str(device).startswith("cuda")


class VideoDecoder:
    """Probe a file and read sampled frames, trying each backend in turn.

    ``backends``: the names to try (default ``default_backends(device)``); ``device``: where torchcodec
    decodes ("cuda", "cuda:N"; None or "cpu": the CPU); ``threads``: decoding threads per file (None: each
    decoder's default; decode workers ask for 1, a worker being a core). A CUDA device that cannot be used
    (no GPU, torchcodec missing or unable to load, NVDEC failing) means decoding on the CPU, said once per process
    ("decode on cuda unavailable (<reason>); decoding on cpu").
    """

    def __init__(self, short_side: int = DEFAULT_SHORT_SIDE, backends: Sequence[str] | None = None,
                 device: str | None = None, threads: int | None = None):
        self.short_side = short_side
        self.device = device
        self.backends: list[Backend] = []
        factories, order = _available_backends(), GPU_BACKENDS if _on_gpu(device) else (*CPU_BACKENDS, "torchcodec")
        wanted = set(backends if backends is not None else default_backends(device))
        if backends is None and not any(f.name in wanted for f in factories):
            wanted = {f.name for f in factories}  # the decoders were narrowed to others (bench.perf.decoders)
        for factory in sorted(factories, key=lambda f: order.index(f.name) if f.name in order else len(order)):
            if factory.name not in wanted:
                continue
            try:
                self.backends.append(_make(factory, device, threads))
            except ImportError as exc:
                _unavailable(factory.name, exc, device)  # decord is optional (x86_64 Linux only), torchcodec too
        if not self.backends:
            raise RuntimeError("no video decoder is installed (install decord or av)")

    def probe(self, path: str | Path) -> VideoInfo:
        """Frame count, rate, duration and size of a file, from the first decoder that can open it."""
        return self._with_backends(path, lambda backend, info: info, self._resize(as_spec(1)))[0]

    def sample(self, path: str | Path, spec: FrameSpec | int, segment_seconds: float | None = None,
               units: Callable[[VideoInfo, list[Span]], slice] | None = None, cut: Sequence[Span] | None = None):
        """Return (VideoInfo, [(Span, Frames), ...]) or raise DecodeError with the reason.

        ``spec`` says which frames and at what size (a bare count: 1 fps then uniform, decoder-scaled).
        The file's units are ``cut`` when given (its shots), else ``spans(duration, segment_seconds)``.
        ``units`` picks, once the file is probed, which of its units to read (default: all), so that a
        long file can be read a window of units at a time and memory never grows with its length.
        """
        spec = as_spec(spec)

        def read(backend, info):
            every_unit = list(cut) if cut is not None else spans(info.duration, segment_seconds)
            chosen = every_unit if units is None else every_unit[units(info, every_unit)]
            wanted = [span_frame_indices(info, span, spec) for span in chosen]
            check_frame_count(spec, wanted)
            # one read for every unit read: the file is opened and indexed once, decoded in one forward pass
            every = backend.read(Path(path), info, [i for indices in wanted for i in indices], self._resize(spec))
            bounds = np.cumsum([0, *map(len, wanted)])
            return [(span, Frames(every.pixels[a:b], every.timestamps[a:b], every.indices[a:b]))
                    for span, a, b in zip(chosen, bounds[:-1], bounds[1:])]

        return self._with_backends(path, read, self._resize(spec))

    def sample_span(self, path: str | Path, spec: FrameSpec | int, start: float, end: float | None) -> Frames:
        """Frames of one time range of a file (an anchor given with --start/--end)."""
        spec = as_spec(spec)

        def read(backend, info):
            stop = info.duration if end is None else min(end, info.duration)
            if start >= stop:
                raise SpanError(start, stop, info.duration)
            indices = span_frame_indices(info, Span(0, start, stop), spec)
            check_frame_count(spec, [indices])
            return backend.read(Path(path), info, indices, self._resize(spec))

        return self._with_backends(path, read, self._resize(spec))[1]

    def _resize(self, spec: FrameSpec):
        return spec.resize if spec.resize is not None else DecoderScaled(self.short_side)

    def _with_backends(self, path, read, resize):
        path = Path(path)
        check_not_empty(path)
        errors = []
        for backend in self._order(resize, path):
            try:
                info = backend.probe(path)
                return info, read(backend, info)
            except (SpanError, FileChanged):
                raise  # the request or the file is at fault, not the backend: another decoder would say the same
            except DecodeError as exc:
                errors.append((backend.name, str(exc)))
            except Exception as exc:  # decoders raise many types; each is a per-file failure
                errors.append((backend.name, _one_line(exc)))
        raise DecodeError(plain_reason(errors))


    def _order(self, resize, path: Path) -> list[Backend]:
        """Full-size frames come from PyAV before decord: decord decodes ahead of a slow reader (each frame is
        resized before the next is asked for) and held 2.2 GB of 4K frames where PyAV held 0.3 GB; torchcodec,
        which decodes a few frames at a time, keeps its place. Containers decord seeks in inexactly
        (``INEXACT_SEEK_FORMATS``) go to PyAV first of all."""
        if inexact_seek_container(path):
            return sorted(self.backends, key=lambda backend: backend.name != "pyav")
        if resize.in_decoder:
            return self.backends
        return sorted(self.backends, key=lambda backend: backend.name == "decord")


def _make(factory: Callable[..., Backend], device: str | None, threads: int | None) -> Backend:
    if factory.name == "torchcodec":
        return factory(device=device, threads=threads or 1)
    if factory.name == "pyav":
        return factory(threads=threads)
    return factory()  # decord: one thread always (its threaded decoding corrupts VP9 frames)


def _unavailable(name: str, exc: ImportError, device: str | None) -> None:
    """A backend that cannot be made: decord or torchcodec not installed is no news, unless decoding on a GPU
    was asked for; torchcodec installed but unable to load is said once."""
    if name != "torchcodec":
        return
    if _on_gpu(device):
        reason = str(exc) if isinstance(exc, BackendUnavailable) else "torchcodec is not installed"
        notice(f"decode on cuda unavailable ({reason}); decoding on cpu")
    elif isinstance(exc, BackendUnavailable):
        notice(f"{exc}; decoding with the other decoders")


# Containers whose seeks land away from their target (MPEG transport and program streams, ASF/WMV): decord
# returned frames 0.5 s and more from the ones it was asked for, and labelled them with the asked-for times, and
# PyAV seeks there past the target; only PyAV decoding from the start is exact, so they go to it first.
INEXACT_SEEK_FORMATS = {"mpegts", "mpeg", "asf", "vob"}


def inexact_seek_container(path: Path) -> bool:
    """Whether ``path`` is an MPEG-TS (188- or 192-byte packets), MPEG-PS or ASF file, by its first bytes."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(400)
    except OSError:
        return False
    transport = any(len(head) > offset + 2 * size and all(head[offset + k * size] == 0x47 for k in range(3))
                    for offset, size in ((0, 188), (4, 192)))
    return transport or head.startswith((b"\x00\x00\x01\xba", ASF_HEADER))


ASF_HEADER = bytes.fromhex("3026b2758e66cf11a6d900aa0062ce6c")


# what a decoder's own words mean, in the user's: the first phrase found in any backend's error wins
KNOWN_FAILURES = (
    ("moov atom not found", "not a complete video file (moov atom not found)"),
    ("partial file", "not a complete video file (truncated)"),
    ("Invalid data found when processing input", "not a video file (invalid data)"),
)


def plain_reason(errors: Sequence[tuple[str, str]]) -> str:
    """One reason for a file every backend failed on, from their (name, message) pairs: a known failure in
    plain words, one message when all say the same, else each backend's."""
    text = " ".join(message for _, message in errors)
    for phrase, reason in KNOWN_FAILURES:
        if phrase in text:
            return reason
    messages = list(dict.fromkeys(message for _, message in errors))
    if len(messages) == 1:
        return messages[0]
    return "; ".join(f"{name}: {message}" for name, message in errors)


def check_not_empty(path: Path) -> None:
    try:
        empty = path.stat().st_size == 0
    except OSError:
        return  # the decoders say what is wrong with it
    if empty:
        raise DecodeError("empty file (0 bytes)")


def check_frame_count(spec: FrameSpec, wanted: list[list[int]]) -> None:
    longest = max(map(len, wanted), default=0)
    if spec.rule == "every" and longest > EVERY_FRAME_LIMIT:
        raise DecodeError(f"every frame of a unit is wanted and one has {longest} (limit {EVERY_FRAME_LIMIT}); "
                          "split the video with --segment")


# decord's C++ messages start "[12:00:00] /path/to/file.cc:151: " and may carry a stack trace
_NATIVE_PREFIX = re.compile(r"\[\d\d:\d\d:\d\d\] \S+:\d+: ")


def _one_line(exc: BaseException) -> str:
    text = _NATIVE_PREFIX.sub("", str(exc)).split("Stack trace")[0]
    return one_line(RuntimeError(text), 300) if text.strip() else type(exc).__name__
