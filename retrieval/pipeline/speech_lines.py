"""Speech into the catalog's timed lines: the ``speech`` indexer (``-i speech``, ``-i speech:<whisper checkpoint>``)
hears each indexed file's sound track once per recogniser and stores what is said as ``speech`` lines, kept by the
file's bytes. A file whose bytes have subtitle lines is not heard: its subtitles say what is said. The spec is
kept in the catalog (``line_sources``), so later runs go on hearing new files without ``-i speech``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from indexers.errors import ModelUnavailableError
from indexers.speech import DEFAULT_CHECKPOINT, SpeechRecognizer
from retrieval.core.errors import one_line
from retrieval.media.audio import RATE, decode_audio
from retrieval.pipeline.line_sources import is_current
from retrieval.pipeline.subtitle_lines import files_by_bytes
from retrieval.store.catalog import Catalog
from retrieval.store.catalog.records import TimedLine

SOURCE = "speech"
NO_VOICE = "no voice"  # the stamp of a read that heard nobody


def checkpoint_of(spec: str) -> str:
    return spec.split(":", 1)[1] if ":" in spec else DEFAULT_CHECKPOINT


@dataclass
class SpeechCounts:
    heard: int = 0  # files whose sound track was heard in this run
    voiced_seconds: float = 0.0
    seconds: float = 0.0  # of audio heard
    lines: int = 0
    unstored: int = 0  # lines the catalog could not take: each skipped alone
    unavailable: str | None = None  # why the recogniser could not be loaded (no file was heard from then on)


def pending(catalog: Catalog, root: Path, origin: str) -> list[tuple[str, Path]]:
    """(bytes, a path of them here) of each indexed file ``origin`` (a recogniser's model id) has not heard
    (``line_sources.is_current``: any read of it counts, silence too).  Files with subtitles are left out."""
    return [(digest, paths[0]) for digest, paths in files_by_bytes(catalog, root).items()
            if not is_current(catalog.line_stamps(digest, SOURCE), origin)
            and not catalog.file_lines(paths[0].relative_to(root).as_posix(), ("subtitle",))]


def sync(catalog: Catalog, root: Path, recognizer: SpeechRecognizer) -> SpeechCounts:
    """Hear every indexed file not yet heard by ``recognizer`` (by its bytes) and store its lines."""
    counts = SpeechCounts()
    for digest, video in pending(catalog, root, recognizer.model_id):
        try:
            _hear(catalog, digest, video, recognizer, counts)
        except ModelUnavailableError as exc:  # no file can be heard: said once, the rest of the run goes on
            counts.unavailable = one_line(exc, 300)
            break
    return counts


def _hear(catalog: Catalog, digest: str, video: Path, recognizer: SpeechRecognizer, counts: SpeechCounts) -> None:
    """Hear one file's sound track and store its lines (none heard: recorded as ``NO_VOICE``)."""
    origin = recognizer.model_id
    audio = decode_audio(video)
    spans = recognizer.voiced(audio) if audio is not None else []
    spoken = recognizer.transcribe(audio, spans)
    # a file without a voice is recorded as heard, so silence is not heard again
    # alone: what another checkpoint heard in these bytes is replaced, not kept beside (each line said once)
    counts.unstored += catalog.replace_lines(digest, SOURCE, origin, recognizer.stamp if spoken else NO_VOICE,
                                             [TimedLine(SOURCE, origin, x.start, x.end, x.text) for x in spoken],
                                             alone=True)
    counts.heard += 1
    counts.seconds += 0.0 if audio is None else audio.size / RATE
    counts.voiced_seconds += sum(b - a for a, b in spans)
    counts.lines += len(spoken)

