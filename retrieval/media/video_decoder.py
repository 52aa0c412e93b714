"""Decode sampled frames of a video: PyAV first, decord as fallback; torchcodec first when decoding on a GPU.

Only the frames a unit needs are decoded (seek + decode up to each target), and
they are resized inside the decoder, so memory depends on the sample count and
the output size, never on the stream's length or resolution.
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from retrieval.core.errors import one_line
from retrieval.core.pixels import DEFAULT_SHORT_SIDE, DecoderScaled
from retrieval.core.sampling import FrameSpec, as_spec
from retrieval.media.damaged import NOTHING_DECODES
from retrieval.media.decord_backend import DecordBackend
from retrieval.media.frames import (
    Backend,
    BackendUnavailable,
    DecodeError,
    FileChanged,
    FrameRangeError,
    Frames,
    Span,
    SpanError,
    VideoDamaged,
    VideoInfo,
    check_frame_count,
    check_not_empty,
    decodable,
    notice,
    span_frame_indices,
    span_frames,
    spans,
)
from retrieval.media.pyav_backend import PyAVBackend, inexact_seek_container
from retrieval.media.torchcodec_backend import TorchCodecBackend


def _available_backends() -> list[Callable[..., Backend]]:
    # torchcodec_backend imports neither torch nor torchcodec itself: making its backend does
    return [DecordBackend, PyAVBackend, TorchCodecBackend]


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
        self._surveyed: dict[tuple[str, int, int], tuple[tuple[int, int], ...]] = {}
        self._damaged: set[str] = set()

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
        Of a damaged file (``VideoDamaged``) the frames the units span are surveyed: the info lists those that
        do not decode (``gaps``), each unit samples among those that do, and a unit where none does is left
        out (none may be left of a window; of a whole file, DecodeError).
        """
        spec = as_spec(spec)

        def chosen(info: VideoInfo) -> list[Span]:
            every_unit = list(cut) if cut is not None else spans(info.duration, segment_seconds)
            return every_unit if units is None else every_unit[units(info, every_unit)]

        def read(backend, info, kept=None, damaged=False):
            kept = chosen(info) if kept is None else kept
            wanted = [span_frame_indices(info, span, spec) for span in kept]
            check_frame_count(spec, wanted)
            # one read for every unit read: the file is opened and indexed once, decoded in one forward pass
            flat = [i for indices in wanted for i in indices]
            every = (backend.read_damaged if damaged else backend.read)(Path(path), info, flat, self._resize(spec))
            bounds = np.cumsum([0, *map(len, wanted)])
            return [(span, Frames(every.pixels[a:b], every.timestamps[a:b], every.indices[a:b]))
                    for span, a, b in zip(kept, bounds[:-1], bounds[1:], strict=False)]

        def read_damaged(pyav: PyAVBackend):
            probed = pyav.probe(Path(path))
            spanned = chosen(probed)
            info = self._survey(pyav, path, probed, spanned)
            kept = [span for span in spanned if decodable(*span_frames(info, span), (*span.gaps, *info.gaps))]
            if kept:
                return info, read(pyav, info, kept, damaged=True)
            if units is None or not pyav.decodes_anything(Path(path)):
                raise DecodeError(NOTHING_DECODES)
            return info, []  # this window of the file has nothing that decodes; others have

        if str(path) in self._damaged:
            return self._on_pyav(read_damaged)
        try:
            return self._with_backends(path, read, self._resize(spec))
        except VideoDamaged:
            self._damaged.add(str(path))
            return self._on_pyav(read_damaged)

    def damaged(self, path: str | Path) -> bool:
        """Whether a read of ``path`` found it damaged: later reads go straight to what decodes of it."""
        return str(path) in self._damaged

    def sample_span(self, path: str | Path, spec: FrameSpec | int, start: float, end: float | None) -> Frames:
        """Frames of one time range of a file (an anchor given with --start/--end)."""

        def span(info: VideoInfo) -> Span:
            stop = info.duration if end is None else min(end, info.duration)
            if start >= stop:
                raise SpanError(start, stop, info.duration)
            return Span(0, start, stop)

        return self._sample_one(path, as_spec(spec), span)

    def sample_frames(self, path: str | Path, spec: FrameSpec | int, first: int, stop: int) -> Frames:
        """Frames of one range of frame numbers, ``first`` up to but not including ``stop``, as given: no
        rounding through seconds (a range a dataset names in frames)."""

        def span(info: VideoInfo) -> Span:
            if first >= min(stop, info.frame_count):
                raise FrameRangeError(first, stop, info.frame_count)
            fps = info.fps or 1.0  # the span's seconds are for show: its frames decide
            return Span(0, first / fps, stop / fps, frames=(first, stop))

        return self._sample_one(path, as_spec(spec), span)

    def _sample_one(self, path: str | Path, spec: FrameSpec, span_of: Callable[[VideoInfo], Span]) -> Frames:
        def read(backend, info, damaged=False):
            indices = span_frame_indices(info, span_of(info), spec)
            if not indices:
                raise DecodeError("no frame of that range of the video could be decoded (its video data is damaged)")
            check_frame_count(spec, [indices])
            return (backend.read_damaged if damaged else backend.read)(Path(path), info, indices, self._resize(spec))

        def read_damaged(pyav: PyAVBackend) -> Frames:  # the rule picks among the frames that decode
            info = pyav.probe(Path(path))
            return read(pyav, self._survey(pyav, path, info, [span_of(info)]), damaged=True)

        try:
            return self._with_backends(path, read, self._resize(spec))[1]
        except VideoDamaged:
            return self._on_pyav(read_damaged)

    def _on_pyav(self, read: Callable[[PyAVBackend], Any]) -> Any:
        """``read(pyav)`` of a damaged file (PyAV alone says what of it decodes), failing as a decode fails."""
        try:
            return read(next(b for b in self.backends if isinstance(b, PyAVBackend)))
        except DecodeError:
            raise
        except Exception as exc:  # as in ``_with_backends``: whatever PyAV raises is this file's failure
            raise DecodeError(_one_line(exc)) from None

    def _survey(self, pyav: PyAVBackend, path: str | Path, info: VideoInfo, units: Sequence[Span]) -> VideoInfo:
        """``info`` with the frames the ``units`` span that do not decode (``gaps``), surveyed once per range: a
        file sampled for several frame specs is decoded once for it."""
        bounds = [span_frames(info, span) for span in units]
        first, stop = min(a for a, _ in bounds), max(b for _, b in bounds)
        key = (str(path), first, stop)
        if key not in self._surveyed:
            self._surveyed[key] = pyav.survey(Path(path), info, first, stop)
        return replace(info, gaps=self._surveyed[key])

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
            except (SpanError, FileChanged, VideoDamaged):
                # the request or the file is at fault, not the backend: another decoder would say the same (of a
                # damaged file, PyAV says which frames do not decode, where the others hand out what they make of it)
                raise
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


# decord's C++ messages start "[12:00:00] /path/to/file.cc:151: " and may carry a stack trace
_NATIVE_PREFIX = re.compile(r"\[\d\d:\d\d:\d\d\] \S+:\d+: ")


def _one_line(exc: BaseException) -> str:
    text = _NATIVE_PREFIX.sub("", str(exc)).split("Stack trace")[0]
    return one_line(RuntimeError(text), 300) if text.strip() else type(exc).__name__
