"""One long video: peak memory of indexing it, whole and in segments (chosen by --long-video)."""

from __future__ import annotations

from bench.perf.section import Check, Section, one_table
from bench.perf.sections.indexing import HEAD, RATES, IndexingResult, row
from bench.perf.targets import TARGET_LONG_VIDEO_MB


def long_video_checks(rows: list[IndexingResult]) -> list[Check]:
    return [(f"long video ({r.decoder}) peaks below {TARGET_LONG_VIDEO_MB / 1024:g} GB RSS", f"{r.peak_rss_mb:.0f} MB",
             r.peak_rss_mb < TARGET_LONG_VIDEO_MB) for r in rows]


SECTION = Section(
    "long_video", "peak memory of indexing one long video, whole and in segments", IndexingResult,
    "bench.perf.long_video:run_long_video", one_table("One long video", HEAD, row), derived=RATES,
    checks=long_video_checks, needs_clips=False, chosen_by=lambda config: config.long_video is not None)
