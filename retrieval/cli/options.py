"""The options several commands share, declared once (``Annotated`` aliases), and the CLI's own input checks.

An option that sets a request field takes its help, value name and bounds from the request's own spec
(``request_option``, ``retrieval.search.request_fields``): the server's schema reads the same ones.

Only typer and constants are imported here: every command's help is built from this module at start-up, and
`convis --help` imports no engine (`convis bench perf --sections cli` measures it). What parses an option's
value is imported from ``retrieval.api`` when a command runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, List, Optional

import typer

# the defaults and limits the help texts name, and each request field's declaration: the public face's light
# names, so the help costs no engine import
from retrieval.api import (
    CANT_TELL_MARGIN,
    DEFAULT_DIFF_MODEL,
    DEFAULT_K,
    DEFAULT_SHOT_MAX_SECONDS,
    DEFAULT_SHOT_MIN_SECONDS,
    INDEX_DIRNAME,
    MAX_CONCEPT_WEIGHT,
    MAX_SAMPLE_FPS,
    MAX_SEGMENT_SECONDS,
    MAX_UPLOAD_BYTES,
    MIN_CONCEPT_WEIGHT,
    MIN_SEGMENT_SECONDS,
    TIME_EXAMPLES,
    UPLOAD_QUOTA_BYTES,
    WINDOW_FRAMES,
    WORKER_MEMORY_MB,
    ConvisError,
    MiB,
)
from retrieval.api import request_fields as spec

__all__ = ["CANT_TELL_MARGIN", "DEFAULT_DIFF_MODEL", "DEFAULT_K", "DEFAULT_SHOT_MAX_SECONDS",
           "DEFAULT_SHOT_MIN_SECONDS", "INDEX_DIRNAME",
           "MAX_SAMPLE_FPS", "MAX_SEGMENT_SECONDS", "MAX_UPLOAD_BYTES", "MIN_SEGMENT_SECONDS", "MiB", "TIME_EXAMPLES",
           "UPLOAD_QUOTA_BYTES", "WINDOW_FRAMES", "WORKER_MEMORY_MB"]


class UserError(ConvisError):
    """What the user typed cannot be run as given (options that exclude each other, a bad value): exit code 2."""

    exit_code = 2


# -- where the index is -----------------------------------------------------------------------
WHERE_HELP = ("The indexed video folder or its index folder (default: the nearest .convis at or above the "
              "current folder).")
WhereArg = Annotated[Optional[Path], typer.Argument(metavar="FOLDER", help=WHERE_HELP, show_default=False)]


def request_option(field: spec.FieldSpec, *flags: str, **extra) -> Any:
    """A typer option for a request field, with the help, value name and bounds the request declares
    (``retrieval.search.request_fields``): the server's schema reads the same ones."""
    bounds = {"min": field.ge, "max": field.le} if field.ge is not None else {}
    return typer.Option(*flags, metavar=field.metavar, help=field.help, **bounds, **extra)


FilterOpt = Annotated[List[str], request_option(spec.WHERE, "--where", show_default=False)]


def _index_dir(help_text: str):
    """``--index-dir DIR`` as a command reads it (each says where it looks by default)."""
    return Annotated[Optional[Path], typer.Option(metavar="DIR", help=help_text)]


IndexDirOpt = _index_dir("Same as FOLDER.")
QueryIndexDirOpt = _index_dir("The indexed video folder or its index folder (default: the nearest .convis above the "
                              "anchor or the current folder).")
CompareIndexDirOpt = _index_dir("The index whose signals score the pair, and where an LMM's score cache is kept "
                                "(default: the nearest .convis above A or the current folder; an LMM without one "
                                "caches in the user cache folder).")
DiffIndexDirOpt = _index_dir("Keep the answer cache in this index (default: the nearest .convis above A, else the "
                             "user cache folder).")
RemoveIndexDirOpt = _index_dir("The index folder, or the video folder holding it (default: the nearest .convis at "
                               "or above FILE).")

# -- output -----------------------------------------------------------------------------------
JsonOpt = Annotated[bool, typer.Option("--json", help="Print as JSON.")]
RunJsonOpt = Annotated[bool, typer.Option("--json", help="Print the run summary as JSON.")]
ResultsJsonOpt = Annotated[bool, typer.Option("--json", help="Print results as JSON.")]
ExplainOpt = Annotated[bool, typer.Option("--explain", help="Also say what the confidence labels are read against "
                                          "(the index's background of unrelated clips) and where they are cut.")]
HtmlOpt = Annotated[Optional[Path], typer.Option("--html", metavar="FILE", help="Also write a self-contained HTML "
                                                 "page here, with thumbnails and players (a file browsers cannot "
                                                 "play links its H.264 preview, made with ffmpeg in the index's "
                                                 "previews/, or FILE-previews/ beside it).")]
TopOpt = Annotated[int, request_option(spec.K, "-k", "--top")]

# -- models -----------------------------------------------------------------------------------
DeviceOpt = Annotated[Optional[str], typer.Option(metavar="DEVICE", help="torch device (default cuda when present, "
                                                  "else cpu).")]


def rerank_batch_option(default: str = "4") -> Any:
    """``--rerank-batch N``, its default told in the help as ``default`` says."""
    return Annotated[Optional[int], typer.Option(
        min=1, metavar="N", help=f"Pairs per LMM forward pass (default {default}); on running out of GPU memory the "
        "batch is halved and retried.")]


RerankBatchOpt = rerank_batch_option()
NoShareOpt = Annotated[bool, typer.Option(
    "--no-share", help="Score every pair as one whole clip: no vision output or prompt prefix shared between the "
    "pairs of one anchor (slower; the scores are the same up to rounding).")]
ModeOpt = Annotated[str, request_option(spec.RERANK_MODE)]
PairModeOpt = Annotated[str, typer.Option(metavar=spec.RERANK_MODE.metavar, help=spec.RERANK_MODE.help
                                          + " With --reranker.")]
SymmetricOpt = Annotated[bool, request_option(spec.SYMMETRIC)]
PairSymmetricOpt = Annotated[bool, typer.Option(help=spec.SYMMETRIC.help + " With --reranker.")]

# -- concepts ---------------------------------------------------------------------------------
CONCEPT_HELP = (f"Concept, optionally weighted by a number from {MIN_CONCEPT_WEIGHT:g} to {MAX_CONCEPT_WEIGHT:g}: "
                "location, main-action=0.7, 'camera angle=2'. "
                "Repeat to combine (weights normalised). The ConViS concepts (location, main-action, main-subjects, "
                "main-objects, order-of-actions) match up to case, spaces and underscores; any other name is free "
                "text, except one close to a ConViS concept ('locaton'), refused as a likely typo unless --free-text.")
QueryConceptsOpt = Annotated[List[str], typer.Option(
    "--concept", "-c", metavar="CONCEPT[=WEIGHT]", help=CONCEPT_HELP + " Required unless --change is given (then: "
    "what must stay the same; without it, the five ConViS concepts equally).")]
PairConceptsOpt = Annotated[List[str], typer.Option("--concept", "-c", metavar="CONCEPT[=WEIGHT]",
                                                    help="Concept(s), optionally weighted, read as in query "
                                                    "(default: the five ConViS concepts, equally).")]
FreeTextOpt = Annotated[bool, request_option(spec.FREE_TEXT, "--free-text")]
ChangeWeightOpt = Annotated[float, request_option(spec.CHANGE_WEIGHT, "--change-weight")]
MostDifferentOpt = Annotated[bool, request_option(spec.MOST_DIFFERENT, "--most-different")]
RerankTopOpt = Annotated[int, request_option(spec.RERANK_TOP)]

# -- text search and near-duplicates ----------------------------------------------------------
SearchTextArg = Annotated[str, typer.Argument(metavar=spec.TEXT.metavar, help=spec.TEXT.help)]
SearchConceptOpt = Annotated[Optional[str], typer.Option(
    "--concept", "-c", metavar=spec.CONCEPT.metavar, help=spec.CONCEPT.help + " A name close to a ConViS concept "
    "('locaton') is refused as a likely typo unless --free-text.")]
SearchModeOpt = Annotated[Optional[str], request_option(spec.SEARCH_MODE, "--mode", show_default=False)]
LevelOpt = Annotated[str, request_option(spec.LEVEL, "--level")]
ThresholdOpt = Annotated[Optional[float], typer.Option("--threshold", metavar=spec.THRESHOLD.metavar,
                                                       help=spec.THRESHOLD.help)]  # the request says its bounds
DupesIndexerOpt = Annotated[Optional[str], request_option(spec.DUPES_INDEXER, "--indexer", "-i")]
KeepOpt = Annotated[str, request_option(spec.KEEP, "--keep")]


# -- reading option values (what parses them is the engine's, imported when a command runs) ----------------
def parse_duration(text: str | None, allow_zero: bool = False, option: str = "duration") -> float | None:
    """``80``, ``80s``, ``1m20s``, ``1:20``, ``00:02`` -> seconds."""
    from retrieval.api import TimeFormatError, parse_time

    if text is None:
        return None
    try:
        seconds = parse_time(text)
    except TimeFormatError as exc:
        raise UserError(f"{option}: {exc}") from None
    if seconds == 0 and not allow_zero:
        raise UserError(f"{option} must be positive: {text!r}")
    return seconds


def resolve_index_dir(index_dir: Optional[Path], *near: Path) -> Path:
    """``--index-dir`` (an index folder or the video folder holding one), else the nearest index above ``near``
    or the current folder."""
    from retrieval.api import locate_index

    return locate_index(index_dir, *[p.parent if p.is_file() else p for p in near], Path.cwd())


def check_page(html: Optional[Path]) -> None:
    """``--html`` names a file to write; said before any work is done."""
    if html is not None and html.is_dir():
        raise UserError(f"--html {html} is a folder: give the page a file name, e.g. {html / 'results.html'}")


def check_mode(mode: str) -> None:
    if mode not in spec.RERANK_MODE.choices:
        raise UserError(f"--mode must be one of {', '.join(spec.RERANK_MODE.choices)}, got {mode!r}")


def concepts_to_score(specs: List[str], mode: str, free_text: bool = False) -> list:
    """The concepts of a query or a comparison, once the reranker's scoring mode is known to be valid."""
    from retrieval.api import parse_concepts

    concepts = parse_concepts(specs, free_text)
    check_mode(mode)
    return concepts


def units_option(segment: str | None, shot_min: float | None, shot_max: float | None):
    """(unit length, shot rule) from ``--segment`` and the shot lengths: a length, 'off' for one unit per file
    (0), or shots; (None, None) keeps the index's own."""
    from retrieval.api import SegmentationError, ShotRule, parse_segment

    try:
        shots = parse_segment(segment) if segment is not None else None
        if shots is None and (shot_min is not None or shot_max is not None):
            raise UserError("--shot-min and --shot-max go with --segment shots")
        if shots is not None:
            return None, ShotRule(shots.detector, shots.min_seconds if shot_min is None else shot_min,
                                  shots.max_seconds if shot_max is None else (shot_max or None))
    except SegmentationError as exc:
        raise UserError(f"--segment: {exc}") from None
    if segment is not None and segment.strip().lower() == "off":
        return 0.0, None
    return parse_duration(segment, option="--segment"), None
