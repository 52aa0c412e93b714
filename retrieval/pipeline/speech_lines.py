"""Speech into the catalog's timed lines: the ``speech`` indexer (``-i speech``, ``-i speech:<whisper checkpoint>``)
hears each indexed file's sound track once per recogniser and stores what is said as ``speech`` lines, kept by the
file's bytes. A file whose bytes have subtitle lines is not heard: its subtitles say what is said. The spec is
kept in the catalog, so later runs go on hearing new files without ``-i speech``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from indexers.errors import ModelUnavailableError
from indexers.speech import DEFAULT_CHECKPOINT, SpeechRecognizer
from retrieval.core.errors import one_line
from retrieval.media.audio import RATE, decode_audio
from retrieval.pipeline.subtitle_lines import files_by_bytes
from retrieval.store.catalog import Catalog
from retrieval.store.catalog.records import TimedLine

SOURCE = "speech"
SPEC = "speech"  # the indexer name: "speech" or "speech:<checkpoint>"
NO_VOICE = "no voice"  # the stamp of a read that heard nobody
SETTING = "speech"  # catalog setting: the speech spec the index was asked for


def is_speech(spec: str) -> bool:
    return spec == SPEC or spec.startswith(SPEC + ":")


def checkpoint_of(spec: str) -> str:
    return spec.split(":", 1)[1] if ":" in spec else DEFAULT_CHECKPOINT


def split_specs(specs: Sequence[str]) -> tuple[list[str], str | None]:
    """(the vector indexers' specs, the speech spec asked for, if any)."""
    speech = [s for s in specs if is_speech(s)]
    return [s for s in specs if not is_speech(s)], (speech[-1] if speech else None)


@dataclass
class SpeechCounts:
    heard: int = 0  # files whose sound track was heard in this run
    voiced_seconds: float = 0.0
    seconds: float = 0.0  # of audio heard
    lines: int = 0
    with_subtitles: int = 0  # files not heard: their subtitles say what is said
    unavailable: str | None = None  # why the recogniser could not be loaded (no file was heard from then on)


def sync(catalog: Catalog, root: Path, recognizer: SpeechRecognizer) -> SpeechCounts:
    """Hear every indexed file not yet heard by ``recognizer`` (by its bytes) and store its lines."""
    counts = SpeechCounts()
    origin = recognizer.model_id
    for digest, paths in files_by_bytes(catalog, root).items():
        if origin in catalog.line_stamps(digest, SOURCE):
            continue
        if catalog.file_lines(paths[0].relative_to(root).as_posix(), ("subtitle",)):
            counts.with_subtitles += 1
            continue
        try:
            _hear(catalog, digest, paths[0], recognizer, counts)
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
    catalog.replace_lines(digest, SOURCE, origin, recognizer.stamp if spoken else NO_VOICE,
                          [TimedLine(SOURCE, origin, x.start, x.end, x.text) for x in spoken], alone=True)
    counts.heard += 1
    counts.seconds += 0.0 if audio is None else audio.size / RATE
    counts.voiced_seconds += sum(b - a for a, b in spans)
    counts.lines += len(spoken)

