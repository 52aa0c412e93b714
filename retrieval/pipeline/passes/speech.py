"""The speech pass: the recogniser the index was asked for (``-i speech[:checkpoint]``, remembered as a line
source) hears every file it has not heard yet; files with subtitles are left to them (``speech_lines``)."""

from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator

from indexers.speech import SpeechRecognizer
from retrieval.pipeline import line_sources, speech_lines
from retrieval.pipeline.passes.base import Counts, IndexPass, PassContext


@dataclass
class SpeechCounts(Counts):
    speech_files: int = 0  # files whose sound track the speech indexer heard in this run
    speech_calls: int = 0  # voiced spans it handed to the recogniser (silence and music: none)
    speech_seconds: float = 0.0  # time it took, voice detection included
    speech_unstored: int = 0  # heard lines the catalog could not take: each skipped alone


class SpeechPass(IndexPass):
    name = "speech"
    counts = SpeechCounts

    def __init__(self):
        self.recognizer: SpeechRecognizer | None = None

    def pending(self, ctx: PassContext) -> list:
        spec = line_sources.spec_of(ctx.catalog, line_sources.SPEECH.name)
        if spec is None:
            return []
        return speech_lines.pending(ctx.catalog, ctx.root, SpeechRecognizer(speech_lines.checkpoint_of(spec)).model_id)

    @contextmanager
    def setup(self, ctx: PassContext) -> Iterator[bool]:
        """The recogniser of the index's speech spec (its weights load on the first file it hears)."""
        from retrieval.core.device import pick_device

        spec = line_sources.spec_of(ctx.catalog, line_sources.SPEECH.name)
        if spec is None:
            yield False
            return
        self.recognizer = SpeechRecognizer(speech_lines.checkpoint_of(spec), device=str(pick_device(ctx.device)))
        try:
            yield True
        finally:
            self.recognizer = None

    def run(self, ctx: PassContext) -> SpeechCounts:
        recognizer = self.recognizer
        started, calls = time.perf_counter(), recognizer.calls
        heard = speech_lines.sync(ctx.catalog, ctx.root, recognizer)
        counts = SpeechCounts(heard.heard, recognizer.calls - calls, time.perf_counter() - started, heard.unstored)
        if heard.unstored:
            ctx.note(line_sources.unstored_note("speech", heard.unstored))
        if heard.unavailable:
            ctx.note(f"speech: no file heard: {heard.unavailable}")
        if heard.heard:
            ctx.note(f"speech: heard {heard.heard} file(s), {heard.seconds:.1f} s of sound, "
                     f"{heard.voiced_seconds:.1f} s of it voiced: {heard.lines} line(s)")
        return counts
