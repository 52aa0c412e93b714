"""The subtitles pass: every indexed file's subtitles (sidecar files and text streams) into the catalog's timed
lines, always on (``subtitle_lines``)."""

from __future__ import annotations

from dataclasses import dataclass

from retrieval.pipeline import subtitle_lines
from retrieval.pipeline.passes.base import Counts, IndexPass, PassContext


@dataclass
class SubtitleCounts(Counts):
    subtitle_reads: int = 0  # subtitle files and streams read (new or changed) into the catalog's lines
    subtitle_unstored: int = 0  # cues the catalog could not take: each skipped alone


class SubtitlesPass(IndexPass):
    name = "subtitles"
    counts = SubtitleCounts

    def pending(self, ctx: PassContext) -> list[subtitle_lines.SubtitleWork]:
        return subtitle_lines.pending(ctx.catalog, ctx.root)

    def run(self, ctx: PassContext) -> SubtitleCounts:
        problems = subtitle_lines.sync(ctx.catalog, self.pending(ctx))
        for text in problems.notes():
            ctx.note(text)
        return SubtitleCounts(problems.files, problems.unstored)
