"""Subtitles a video carries: ``.srt``/``.vtt`` files beside it (``talk.srt``, ``talk.en.vtt``) and the text
subtitle streams inside it (mov_text, subrip, ass, webvtt), read as timed cues.

pysubs2 parses the cues. It folds a cue whose timing line it cannot read into the cue before it, so blocks with a
broken timing line are taken out first and counted: what a read could not use is said by problem class
(``PROBLEMS``), and every other cue is kept as the file has it, overlaps included.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import av
import pysubs2

from retrieval.core.defaults import MiB
from retrieval.core.user_files import UserFileError, decode_lines, read_limited

SIDECAR_FORMATS = {".srt": "srt", ".vtt": "vtt"}
TEXT_CODECS = ("mov_text", "subrip", "srt", "ass", "ssa", "webvtt", "text")
# a day of speech cued every two seconds is ~43,000 cues; past this a file costs index time and answers for nothing
MAX_CUES = 50_000
# what a read could not take as it came, one report line each (``pipeline.subtitle_lines``)
PROBLEMS = {
    "encoding": "not UTF-8, read with a fallback encoding",
    "malformed": "cue(s) without a readable time skipped",
    "overlap": "cue(s) overlapping the one before, kept",
    "unreadable": "unreadable, no cues taken",
    "too_many": f"cue(s) past the first {MAX_CUES:,} skipped",
}
# a feature film's subtitles are ~100 KB, a day of speech cued every second ~5 MB; more is not a subtitle file
SIDECAR_LIMIT = 16 * MiB
_STAMP = r"(?:\d+:)?\d{1,2}:\d{2}[.,]\d{1,3}"
_TIMING = re.compile(rf"^\s*{_STAMP}\s*-->\s*{_STAMP}(?:\s.*)?$")
_LANGUAGE = re.compile(r"[A-Za-z]{2,3}(?:[-_][A-Za-z0-9]{2,8})*")  # en, eng, pt-BR, zh-Hant


@dataclass(frozen=True)
class Cue:
    start: float  # seconds into the video
    end: float
    text: str


@dataclass
class SubtitleRead:
    """The cues of one subtitle file or stream, and how many times each problem class came up in it."""

    cues: list[Cue] = field(default_factory=list)
    problems: dict[str, int] = field(default_factory=dict)
    encoding: str = "utf-8"
    reason: str | None = None  # why an unreadable file was not read

    def problem(self, kind: str, count: int = 1) -> None:
        if count:
            self.problems[kind] = self.problems.get(kind, 0) + count


@dataclass(frozen=True)
class Sidecar:
    path: Path
    language: str | None  # the name's language tag (talk.en.vtt: "en")

    def stamp(self) -> str:
        st = self.path.stat()
        return f"{st.st_size}:{st.st_mtime_ns}"


def sidecars(video: Path, names: list[str] | None = None) -> list[Sidecar]:
    """The subtitle files beside ``video`` that share its stem (``names``: its folder's listing, when known)."""
    stem = video.stem
    found = []
    for name in sorted(names if names is not None else _listing(video.parent)):
        base, suffix = name[:len(name) - 4], name[-4:].lower()
        if suffix not in SIDECAR_FORMATS or not (base == stem or base.startswith(stem + ".")):
            continue
        tag = base[len(stem) + 1:] or None
        if tag is None or _LANGUAGE.fullmatch(tag):
            found.append(Sidecar(video.parent / name, tag))
    return found


def _listing(folder: Path) -> list[str]:
    try:
        return [p.name for p in folder.iterdir()]
    except OSError:
        return []


def read_sidecar(path: Path, root: Path | None = None) -> SubtitleRead:
    """The cues of a ``.srt``/``.vtt`` file read by ``core.user_files``' rule (a regular file, inside ``root``
    when given, at most ``SIDECAR_LIMIT`` bytes); one it cannot read gives none and says why."""
    read = SubtitleRead()
    try:
        raw = read_limited(path, "subtitle file", SIDECAR_LIMIT, root=root)
    except UserFileError as exc:
        read.reason = getattr(exc, "reason", None)
        read.problem("unreadable")
        return read
    text, read.encoding = decode(raw)
    if read.encoding != "utf-8":
        read.problem("encoding")
    return parse(text, SIDECAR_FORMATS[path.suffix.lower()], read)


def decode(raw: bytes) -> tuple[str, str]:
    """(text, how it was read: "utf-8", else the fallback encodings its lines that are not UTF-8 took)."""
    text, fallbacks = decode_lines(raw)
    return text, "+".join(fallbacks) or "utf-8"


def parse(text: str, fmt: str, read: SubtitleRead | None = None) -> SubtitleRead:
    """Cues of subtitle ``text`` in ``fmt`` ("srt" or "vtt"), by start time."""
    read = read if read is not None else SubtitleRead()
    text, broken = _without_broken_blocks(text)
    read.problem("malformed", broken)
    try:
        events = pysubs2.SSAFile.from_string(text, format_=fmt)
    except Exception:  # pysubs2 raises its own and ValueError alike; a file it rejects costs only its cues
        read.problem("unreadable")
        return read
    return _cues(((e.start / 1000, e.end / 1000, e.plaintext) for e in events if not e.is_comment), read)


def _cues(events, read: SubtitleRead) -> SubtitleRead:
    """Cues from (start, end, text), by start: a backwards one is malformed, an empty one carries nothing."""
    shown = -1.0
    for start, end, text in sorted(events, key=lambda e: e[0]):
        if len(read.cues) == MAX_CUES:
            read.problem("too_many")
            continue
        text = " ".join(text.split())
        if end < start or start < 0:
            read.problem("malformed")
            continue
        if not text:
            continue
        if start < shown:
            read.problem("overlap")
        shown = max(shown, end)
        read.cues.append(Cue(float(start), float(end), text))
    return read


def _without_broken_blocks(text: str) -> tuple[str, int]:
    """``text`` less its blocks whose timing line (the one with ``-->``) does not read as two times, each cue
    from its timing line on (pysubs2 would take a WebVTT cue's identifier for the text of the cue before)."""
    kept, broken = [], 0
    for block in re.split(r"\n[ \t]*\n", text.replace("\r\n", "\n")):
        lines = block.split("\n")
        timing = [i for i, line in enumerate(lines) if "-->" in line]
        if any(not _TIMING.match(lines[i]) for i in timing):
            broken += 1
            continue
        kept.append("\n".join(lines[timing[0]:] if timing else lines))
    return "\n\n".join(kept), broken


# -- streams inside the video ----------------------------------------------------------------------
@dataclass(frozen=True)
class SubtitleStream:
    index: int  # the container's stream index ("stream:N")
    language: str | None
    read: SubtitleRead


def read_streams(video: Path) -> list[SubtitleStream]:
    """The cues of every text subtitle stream in ``video`` (image subtitles, DVD or PGS, hold no text).
    A container PyAV cannot open has none."""
    try:
        container = av.open(str(video))
    except (av.FFmpegError, OSError):
        return []
    with container:
        streams = [s for s in container.streams.subtitles if s.codec_context.name in TEXT_CODECS]
        if not streams:
            return []
        events: dict[int, list] = {s.index: [] for s in streams}
        reads = {s.index: SubtitleRead() for s in streams}
        try:
            for packet in container.demux(streams):
                _packet_event(packet, events[packet.stream.index], reads[packet.stream.index])
        except av.FFmpegError:
            for read in reads.values():
                read.problem("unreadable")
        return [SubtitleStream(s.index, _stream_language(s), _cues(events[s.index], reads[s.index]))
                for s in streams]


def _packet_event(packet, events: list, read: SubtitleRead) -> None:
    """One demuxed subtitle packet as (start, end, text); the packet's bytes are its cue's text (mov_text: a
    16-bit length first; ass: the dialogue fields, the text the ninth)."""
    if packet.pts is None or packet.size == 0:
        return
    data, codec = bytes(packet), packet.stream.codec_context.name
    if codec == "mov_text":
        data = data[2:2 + int.from_bytes(data[:2], "big")]
    text, encoding = decode(data)
    if encoding != "utf-8":
        read.encoding = encoding
        read.problem("encoding")
    if codec in ("ass", "ssa"):
        text = pysubs2.SSAEvent(text=text.split(",", 8)[-1]).plaintext
    else:
        text = re.sub(r"<[^>]+>", "", text)  # subrip and webvtt markup: <i>, <b>, <v Name>
    start = float(packet.pts * packet.time_base)
    end = start + float((packet.duration or 0) * packet.time_base)
    events.append((start, end, text))


def _stream_language(stream) -> str | None:
    language = (stream.metadata or {}).get("language")
    return None if language in (None, "", "und") else language
