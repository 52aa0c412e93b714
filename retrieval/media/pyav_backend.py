"""The PyAV backend: FFmpeg's libraries through PyAV, decoding only the frames a unit needs.

Each target frame is reached by seeking to the keyframe before it (only across keyframes) and decoding
forward in one pass, and is resized as soon as it is decoded (inside the decoder where the policy allows).

A damaged stream (bytes overwritten, a hole, a truncated file) has packets the decoder refuses: FFmpeg goes on
with the next one, and so does every decode here (``decoded_frames``). ``read`` says so (``VideoDamaged``)
rather than hand out frames from a file whose damage is not known; ``survey`` finds which frames of a range
decode and ``read_damaged`` reads those.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator, Sequence

import numpy as np

from retrieval.media.damaged import clipped, frame_numbers, gaps_of
from retrieval.media.frames import DecodeError, Frames, VideoDamaged, VideoInfo, reorder


class PyAVBackend:
    """``threads``: FFmpeg's decoding threads (None: its own choice, slice threads on every core)."""

    name = "pyav"

    def __init__(self, threads: int | None = None) -> None:
        import av

        av.logging.set_level(av.logging.PANIC)
        self.threads = threads

    def probe(self, path: Path) -> VideoInfo:
        with open_video(path) as container:
            if not container.streams.video:
                raise DecodeError("no video stream (audio-only or not a video)")
            stream = container.streams.video[0]
            fps = float(stream.average_rate or stream.guessed_rate or 0) or 25.0
            duration = _stream_duration(container, stream)
            count = int(stream.frames or 0) or int(round(duration * fps))
            width, height = stream.codec_context.width, stream.codec_context.height
            rotation = _first_frame_rotation(container, stream)
            codec = stream.codec_context.codec.name or ""
        if count <= 0:
            raise DecodeError("video stream has no frames")
        if rotation in (90, 270):
            width, height = height, width
        return VideoInfo(count, fps, duration or count / fps, width, height, self.name, rotation, codec=codec)

    def read(self, path: Path, info: VideoInfo, indices: Sequence[int], resize) -> Frames:
        """The frames numbered ``indices``; raises ``VideoDamaged`` when any packet on the way would not decode."""
        damage = Damage()
        try:
            frames = self._read(path, info, indices, resize, damage)
        except DecodeError:
            if not damage.found:
                raise
            frames = None  # no frame came out, where packets did not decode: what does is surveyed
        if damage.packets:
            raise VideoDamaged(f"{damage.packets} packet(s) of the video could not be decoded")
        if damage.cut_short:
            raise VideoDamaged("the file ends before the frames its container lists")
        return frames

    def read_damaged(self, path: Path, info: VideoInfo, indices: Sequence[int], resize) -> Frames:
        """``read`` of a damaged file, whose ``indices`` are frames that decode (``survey``): packets that do not
        decode are passed over, and where a seek misses a target (the keyframe it lands on does not decode) the
        frames are decoded in one pass from the keyframe before the first, as ``survey`` decodes them."""
        damage = Damage()
        frames = self._read(path, info, indices, resize, damage)
        if damage.missed:
            frames = self._read(path, info, indices, resize, Damage(), seek=False)
        return frames

    def survey(self, path: Path, info: VideoInfo, first: int, stop: int) -> tuple[tuple[int, int], ...]:
        """The frames of [first, stop) that do not decode, as ranges [a, b): decoded in one pass from the
        keyframe before ``first``, frames left unconverted, every packet handed to the decoder and one it refuses
        passed over, as FFmpeg does. Frames the file holds no packets for (it was cut short) are among them."""
        with open_video(path) as container:
            stream = container.streams.video[0]
            packet_times, _ = _packet_times(container, stream, upto=stop)
        origin, decoded = _start_time(stream), []
        with open_video(path) as container:
            stream = container.streams.video[0]
            if self.threads:
                stream.codec_context.thread_count = self.threads
            if first > 0:
                at = packet_times[first] if packet_times and len(packet_times) > first else origin + first / info.fps
                container.seek(max(0, int(at / stream.time_base)), stream=stream, backward=True, any_frame=False)
            for frame in decoded_frames(container, stream, Damage()):
                [number] = frame_numbers([frame.time], packet_times or [], origin, info.fps)
                if number >= stop:
                    break  # frames come in presentation order: the range is done
                decoded.append(number)
        return clipped(gaps_of([n for n in decoded if n >= first], stop), first, stop)

    def decodes_anything(self, path: Path) -> bool:
        """Whether any frame of the file decodes (a decode from its start, up to the first frame that does)."""
        with open_video(path) as container:
            return next(decoded_frames(container, container.streams.video[0], Damage()), None) is not None

    def _read(self, path: Path, info: VideoInfo, indices: Sequence[int], resize, damage: "Damage",
              seek: bool = True) -> Frames:
        unique = sorted(set(indices))
        small = frame_converter(info, resize)
        with open_video(path) as container:
            stream = container.streams.video[0]
            frame_times, keyframes = _packet_times(container, stream, upto=unique[-1])
            exact_seeks = container.format.name.split(",")[0] not in INEXACT_SEEK_FORMATS
            seekable = seek and exact_seeks
            # a frame wanted past the packets there are, where the container counts more (an MP4's count is
            # exact; others' are estimates): the file was cut short
            damage.cut_short = frame_times is not None and len(frame_times) <= unique[-1] < int(stream.frames or 0)
        # times are the stream's own, which need not start at 0 (MPEG-TS starts at 1.4 s, often); the
        # times recorded count from its first frame, as players show them
        origin = _start_time(stream)
        # frame numbers are positions in presentation order: exact with the packets' times
        # (variable frame rate too), else the nominal i / fps
        exact = frame_times is not None and len(frame_times) > unique[-1]
        targets = [frame_times[i] if exact else origin + i / info.fps for i in unique]
        early = 1e-6 if exact else 0.5 / info.fps
        with open_video(path) as container:  # afresh: demuxing the packets' times moved it on
            stream = container.streams.video[0]
            if self.threads:
                stream.codec_context.thread_count = self.threads
            if not seek and exact_seeks:  # one pass, from the keyframe before the first target
                container.seek(max(0, int(targets[0] / stream.time_base)), stream=stream, backward=True,
                               any_frame=False)
            # where seeking lands after its target, only decoding from the start finds each frame
            grabbed = _grab_frames(container, stream, _Wanted(targets, early, exact), keyframes if seekable else [],
                                   small, seek=seekable, damage=damage)
        grabbed = _fill_missing(grabbed)
        pixels = np.stack([image for image, _ in grabbed])
        times = np.array([float(t if t is not None else target) - origin
                          for (_, t), target in zip(grabbed, targets, strict=False)])
        return reorder(unique, pixels, times, indices)


def open_video(path: Path):
    """The file opened for reading; metadata that is not UTF-8 (an old camera's, or damaged) is read with
    replacement characters, where PyAV's default refuses the whole file."""
    import av

    return av.open(str(path), metadata_errors="replace")


class Damage:
    """What a decode met: packets the decoder refused (or where demuxing stopped), the time of every packet
    demuxed, targets it did not find (``_grab_frames``), and whether the file ends before the frames its
    container lists (``cut_short``)."""

    def __init__(self) -> None:
        self.packets, self.missed, self.cut_short = 0, 0, False
        self.packet_times: list[float | None] = []  # None: a packet without a time

    @property
    def found(self) -> bool:
        return bool(self.packets) or self.cut_short


def decoded_frames(container, stream, damage: Damage) -> Iterator:
    """``container.decode(stream)``, the same frames for an intact stream, going on past each packet the decoder
    refuses, as FFmpeg does; demuxing that fails ends the stream. Both are counted in ``damage``."""
    packets = container.demux(stream)
    while True:
        try:
            packet = next(packets)
        except StopIteration:
            return
        except av_errors():
            damage.packets += 1
            return
        if packet.size:  # not the end-of-stream marker
            damage.packet_times.append(None if packet.pts is None else float(packet.pts * stream.time_base))
        try:
            frames = packet.decode()
        except av_errors():
            damage.packets += 1
            continue
        yield from frames


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
        frame = next(decoded_frames(container, stream, Damage()))
    except (StopIteration, av_errors()):
        return 0
    return int(round((getattr(frame, "rotation", 0) or 0) / 90)) % 4 * 90


def av_errors() -> type[BaseException]:
    import av

    return av.error.FFmpegError


@dataclass(frozen=True)
class _Wanted:
    """The times of the frames wanted (ascending) and how a decoded frame matches one: a frame up to ``early``
    seconds before a target counts as at it; ``exact``: the times are the stream's own frame times."""

    targets: Sequence[float]
    early: float
    exact: bool = False


def _grab_frames(container, stream, wanted: _Wanted, keyframes: list[float] | None, keep: Callable,
                 seek: bool = True, damage: Damage | None = None) -> list:
    """``keep(frame)`` of the frame at each target time (ascending), in one forward pass.

    A frame up to ``early`` seconds before a target counts as at it. A seek restarts decoding at
    the keyframe before its target; when that keyframe is not past the frame already decoded,
    going on decoding reaches the target for less work, so the pass seeks only across keyframes
    (short clips often have one or two: then it never re-decodes). ``exact``: the targets are the
    stream's own frame times, so the frame with that very time is wanted (see ``_Decoded``). Without
    ``seek``, one pass from where the container stands (a freshly opened one: its start). ``damage``
    counts the packets that would not decode and the targets whose own frame was not found.
    """
    damage = damage if damage is not None else Damage()
    grabbed, last = [], None
    decoded = None if seek else _Decoded(decoded_frames(container, stream, damage))
    early, exact = wanted.early, wanted.exact
    for target in wanted.targets:
        if seek and (last is None or last.time is None or _keyframe_between(keyframes, last.time, target)):
            container.seek(max(0, int(target / stream.time_base)), stream=stream, backward=True, any_frame=False)
            decoded = _Decoded(decoded_frames(container, stream, damage))
        frame = decoded.take(target, early, exact)
        damage.missed += not _at(frame, target, early, exact)
        grabbed.append(None if frame is None else keep(frame))
        last = frame if frame is not None else last
    return grabbed


def _at(frame, target: float, early: float, exact: bool) -> bool:
    """Whether ``frame`` is the one at ``target`` (a frame without a time is taken at its word)."""
    if frame is None or frame.time is None:
        return frame is not None
    return abs(frame.time - target) < 1e-6 if exact else frame.time <= target + early


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
