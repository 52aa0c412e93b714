"""Whether a browser plays a video as it is, and small H.264 previews of the videos it cannot play.

Previews are made with the ffmpeg command-line tool (the same build that decodes anything PyAV reads)
and cached by the file's content hash, so a moved or renamed file keeps its preview and a changed one
gets a new one.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from retrieval.core.errors import ConvisError, one_line
from retrieval.core.files import atomic_write
from retrieval.media.stream_check import VERDICTS_NAME, StreamVerdicts, stream_errors

# What current desktop Chromium and Firefox play with no plug-in: ISO BMFF (mp4/mov/m4v) or WebM holding
# these video codecs (None: any pixel format; h264 only as 8-bit 4:2:0, which is all both decode) and, if
# there is sound, these audio codecs.  HEVC is left out: Chromium plays it only where the system has a
# hardware decoder, Firefox hardly at all.  Matroska counts only when named .webm (Firefox refuses .mkv).
BROWSER_PLAYS = {
    "containers": ("mp4", "mov", "webm"),
    "video": {"h264": ("yuv420p", "yuvj420p"), "vp8": None, "vp9": None, "av1": None},
    "audio": ("aac", "mp3", "opus", "vorbis", "flac"),
}

# the content hashes previews are keyed by (scan.content_hash): hex only, so a key never names another folder
_KEY = re.compile(r"[0-9a-f]{8,128}")


@dataclass(frozen=True)
class Playback:
    playable: bool
    container: str | None  # the container's short name ("mp4", "avi", "matroska")
    codec: str | None  # the first video stream's codec ("h264", "msmpeg4v3")
    reason: str | None  # why a browser cannot play it, one line, for the user; None when it can


class PreviewError(ConvisError, RuntimeError):
    """A preview or clip could not be made; the message is one line naming the file, never its folder."""

    exit_code, http_status = 1, 503


def playback(path: str | os.PathLike, stream_check: Callable[[Path], str | None] = stream_errors) -> Playback:
    """Whether current desktop browsers play ``path`` as it is (:data:`BROWSER_PLAYS`, and its first seconds
    decode without an error: ``stream_check``, see stream_check.py), and why not."""
    import av  # PyAV: only callers that look at files pay for importing it

    try:
        with av.open(str(path)) as container:
            found = _judge(Path(path), container)
        errors = stream_check(Path(path)) if found.playable else None
    except (av.FFmpegError, OSError) as exc:
        reason = getattr(exc, "strerror", None) or one_line(exc)
        return Playback(False, None, None, f"cannot read the file: {_without_paths(reason, Path(path))}")
    if errors is not None:
        return Playback(False, found.container, found.codec, f"{found.codec} video with a stream error ({errors}): "
                                                             f"browsers may refuse it")
    return found


def _judge(path: Path, container) -> Playback:
    names = container.format.name.split(",")
    kind = _container_name(names, path)
    video = next(iter(container.streams.video), None)
    if video is None:
        return Playback(False, kind, None, "no video stream in the file")
    codec = video.codec_context.codec.canonical_name
    audio = next(iter(container.streams.audio), None)
    sound = audio.codec_context.codec.canonical_name if audio is not None else None
    pix_fmt = video.codec_context.format.name if video.codec_context.format else None
    in_file = f"in {_article(kind)} file"
    if codec not in BROWSER_PLAYS["video"] or not _plays_container(names, path):
        return Playback(False, kind, codec, f"{codec} video {in_file}: browsers cannot play it")
    formats = BROWSER_PLAYS["video"][codec]
    if formats is not None and pix_fmt not in formats:
        return Playback(False, kind, codec, f"{codec} video in {pix_fmt or 'an unknown pixel format'}: "
                                            f"browsers cannot play it")
    if sound is not None and sound not in BROWSER_PLAYS["audio"]:
        return Playback(False, kind, codec, f"{sound} audio {in_file}: browsers cannot play it")
    return Playback(True, kind, codec, None)


def _plays_container(names: list[str], path: Path) -> bool:
    if "webm" in names:  # PyAV's one Matroska demuxer reads both; browsers play only what is named WebM
        return path.suffix.lower() == ".webm"
    return any(name in BROWSER_PLAYS["containers"] for name in names)


def _container_name(names: list[str], path: Path) -> str:
    """The demuxer's name the file's own suffix uses ("mp4", not "mov,mp4,m4a,3gp,3g2,mj2"), else its first."""
    suffix = path.suffix.lower().lstrip(".")
    return suffix if suffix in names else names[0]


def _article(container: str) -> str:
    """ "an AVI", "an MP4", "a Matroska": short names are read letter by letter."""
    if len(container) <= 4:
        return ("an " if container[0].upper() in "AEFHILMNORSX" else "a ") + container.upper()
    return ("an " if container[0].lower() in "aeiou" else "a ") + container.capitalize()


def ffmpeg_missing() -> str | None:
    """None when the ffmpeg tool is on the PATH, else the one-line reason previews are not made."""
    if shutil.which("ffmpeg") is None:
        return "ffmpeg is not installed: previews of files browsers cannot play are not made"
    return None


class Previews:
    """H.264 MP4 previews of the videos browsers cannot play, one per file content, in ``folder``."""

    _locks: dict[Path, threading.Lock] = {}  # shared by every instance: two of them may serve one folder
    _locks_guard = threading.Lock()

    def __init__(self, folder: Path, short_side: int = 360, timeout: float = 600):
        self.folder, self.short_side, self.timeout = Path(folder), short_side, timeout
        self.verdicts = StreamVerdicts(self.folder / VERDICTS_NAME)  # which files' streams decode cleanly

    def playback(self, path: Path) -> Playback:
        """:func:`playback`, each file's streams checked once for this folder's previews."""
        return playback(path, self.verdicts.errors)

    def path_for(self, src: Path, content_hash: str) -> Path:
        """Where the preview of ``src`` goes: keyed by its content, not its name."""
        if not _KEY.fullmatch(content_hash):
            raise ValueError(f"not a content hash: {content_hash[:40]!r}")
        return self.folder / f"{content_hash}.mp4"

    def cached(self, src: Path, content_hash: str) -> Path | None:
        path = self.path_for(src, content_hash)
        return path if path.is_file() else None

    def ensure(self, src: Path, content_hash: str) -> Path:
        """The preview of ``src``, made now if it is not there yet (once, however many ask at the same time)."""
        target = self.path_for(src, content_hash)
        with self._lock(target):
            if target.is_file():
                return target
            ffmpeg = _ffmpeg()
            self.folder.mkdir(parents=True, exist_ok=True)
            # written beside the target and renamed over it: a killed ffmpeg leaves no half file that looks done
            atomic_write(target, lambda tmp: _encode(ffmpeg, Path(src), tmp, [], self.short_side, self.timeout))
        return target

    def _lock(self, target: Path) -> threading.Lock:
        with self._locks_guard:
            return self._locks.setdefault(target.resolve(), threading.Lock())


def span_clip(src: Path, start: float, end: float | None, short_side: int = 240, max_bytes: int = 4 << 20, *,
              timeout: float = 600) -> bytes:
    """An H.264 MP4 of ``[start, end]`` of ``src`` (to the end when ``end`` is None), as bytes to embed."""
    ffmpeg = _ffmpeg()
    if end is not None and end <= start:
        raise PreviewError(f"empty time range {start:g}-{end:g} s of {Path(src).name}")
    span = ["-ss", f"{start:.3f}"] + ([] if end is None else ["-t", f"{end - start:.3f}"])
    with tempfile.TemporaryDirectory(prefix="convis-clip-") as folder:
        out = Path(folder) / "clip.mp4"
        _encode(ffmpeg, Path(src), str(out), span, short_side, timeout)
        size = out.stat().st_size
        if size > max_bytes:
            raise PreviewError(f"the clip of {Path(src).name} is {size / 2**20:.1f} MiB, more than the "
                               f"{max_bytes / 2**20:.1f} MiB an embedded video may take")
        return out.read_bytes()


def _ffmpeg() -> str:
    reason = ffmpeg_missing()
    if reason:
        raise PreviewError(reason)
    return shutil.which("ffmpeg")


def _scale(short_side: int) -> str:
    """The short side at most ``short_side``, never upscaled; both sides even, as yuv420p H.264 needs."""
    side = f"max(2,trunc(min({{}},{short_side})/2)*2)"  # 0 would mean "keep the input's size" to ffmpeg
    return (f"scale=w='if(lte(iw,ih),{side.format('iw')},-2)'"
            f":h='if(lte(iw,ih),-2,{side.format('ih')})'")


def _encode(ffmpeg: str, src: Path, out: str, span: list[str], short_side: int, timeout: float) -> None:
    """Run ffmpeg: ``src`` (``span``: input seek/length options) to a small H.264/AAC MP4 at ``out``."""
    # "file:" so a name with a colon is never taken for a protocol ("concat:", "http:")
    command = [ffmpeg, "-nostdin", "-v", "error", "-y", *span, "-i", f"file:{os.path.abspath(src)}",
               "-map", "0:v:0", "-map", "0:a:0?", "-c:v", "libx264", "-preset", "veryfast", "-crf", "28",
               "-pix_fmt", "yuv420p", "-vf", _scale(short_side), "-c:a", "aac", "-b:a", "96k",
               "-movflags", "+faststart", "-f", "mp4", f"file:{os.path.abspath(out)}"]
    try:
        done = subprocess.run(command, capture_output=True, text=True, errors="replace", timeout=timeout)
    except subprocess.TimeoutExpired:
        raise PreviewError(f"ffmpeg took more than {timeout:g} s over {src.name}") from None
    except OSError as exc:
        raise PreviewError(f"ffmpeg could not be started: {one_line(exc)}") from None
    if done.returncode != 0:
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        last = lines[-1] if lines else f"exit status {done.returncode}"
        raise PreviewError(f"ffmpeg could not convert {src.name}: {_without_paths(last, src, out)}")


def _without_paths(text: str, *paths: str | os.PathLike) -> str:
    """``text`` with each of ``paths`` (as given and absolute) shown by its file name only."""
    for path in paths:
        forms = {str(path), os.path.abspath(path)}
        for form in sorted(forms | {f"file:{f}" for f in forms}, key=len, reverse=True):
            text = text.replace(form, Path(path).name)
    return one_line(text)
