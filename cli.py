"""convis command line: index a folder of videos, query it by concept, compare pairs, run benchmarks.

``python cli.py ...`` and the installed ``convis ...`` are the same app.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, List, Optional

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from typer.core import TyperGroup

try:  # typer carries its own copy of click since 0.22
    from typer._click import exceptions as click_errors
except ImportError:
    from click import exceptions as click_errors

from retrieval.cli.console import PlainUsage, counting
from retrieval.core.concepts import Concept, parse_concepts
from retrieval.core.defaults import (
    DEFAULT_DIFF_MODEL,
    DEFAULT_K,
    INDEX_DIRNAME,
    MAX_UPLOAD_BYTES,
    MIN_SEGMENT_SECONDS,
    UPLOAD_QUOTA_BYTES,
    WINDOW_FRAMES,
    WORKER_MEMORY_MB,
    MiB,
)
from retrieval.core.errors import one_line
from retrieval.core.segmentation import DEFAULT_SHOT_MAX_SECONDS, DEFAULT_SHOT_MIN_SECONDS
from retrieval.core.timecode import EXAMPLES as TIME_EXAMPLES
from retrieval.core.timecode import TimeFormatError, format_span, format_time, parse_time

if TYPE_CHECKING:
    from retrieval.search.results import CompareResult, QueryResult

# Start-up is most of what `convis --help`, `query` (an indexed anchor), `info` and `ls` cost, so this module
# imports only what every command needs; each command imports the engine, and the engine what it uses
# (models, decoders, FastAPI, the bench commands' SciPy are imported by the commands that run them).
# `convis bench perf --section cli` measures it; tests/cli/test_light_imports.py checks what is imported.
BENCH_HELP = "Reproduce ConViS-Bench metrics and measure convis on them."

EXIT_CODES = ("exit codes: 0 done, 1 nothing usable came out of the run or the system refused (disk full, "
              "permission), 2 usage or input error, 130 interrupted")


class OneLineErrors(TyperGroup):
    """Usage errors (unknown option, missing value, bad choice) as one line on stderr, exit code 2.

    The ``bench`` sub-app is loaded when a command line names it: until then it is a placeholder carrying its
    one-line help, which is all ``convis --help`` shows of it."""

    _listing = False  # True while the help lists the commands: the placeholder's help is enough

    def get_command(self, ctx, cmd_name: str):
        if cmd_name == "bench" and not self._listing and getattr(self.commands.get(cmd_name), "placeholder", False):
            self.commands[cmd_name] = _bench_group()
        return super().get_command(ctx, cmd_name)

    def format_commands(self, ctx, formatter) -> None:
        self._listing = True
        try:
            super().format_commands(ctx, formatter)
        finally:
            self._listing = False

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode: bool = True, **extra):
        try:
            code = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except click_errors.NoArgsIsHelpError as exc:
            out.print(exc.format_message(), highlight=False, markup=False)  # a bare `convis` prints its help
            code = 0
        except click_errors.ClickException as exc:
            hint = f" (see {exc.ctx.command_path} --help)" if getattr(exc, "ctx", None) else ""
            err.print(f"[bold red]error:[/] {escape(exc.format_message())}{hint}", highlight=False, soft_wrap=True)
            code = exc.exit_code
        except typer.Abort:
            code = 130
        if not standalone_mode:
            return code
        sys.exit(code if isinstance(code, int) else 0)


app = typer.Typer(cls=OneLineErrors, add_completion=False, no_args_is_help=True, rich_markup_mode=None,
                  context_settings={"help_option_names": ["-h", "--help"]},
                  help="Concept-conditioned video retrieval: find clips like this one, in terms of a concept.",
                  epilog=EXIT_CODES)
# emoji=False: model ids such as "package:..." must print as written
out = Console(emoji=False)
err = Console(stderr=True, emoji=False)


class UserError(Exception):
    """Anything the user can fix: printed as one line, exit code 2."""


def fail(message: str, code: int = 2) -> None:
    err.print(f"[bold red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)
    raise typer.Exit(code)


def _expected_errors() -> tuple[type[BaseException], ...]:
    """The engine's failures a user can fix: imported when something failed, not at start-up."""
    from indexers.errors import ModelUnavailableError
    from rerankers.base import RerankerError
    from rerankers.diff_prompt import DiffInputError
    from retrieval.core.concepts import ConceptError
    from retrieval.core.registry import UnknownModelError
    from retrieval.engine import NoIndexError, NotIndexedError
    from retrieval.pipeline.describe_run import NoCaptionerError
    from retrieval.pipeline.indexing import IndexSettingsError
    from retrieval.pipeline.ray_pipeline import RayUnavailable
    from retrieval.search.anchor import AnchorError
    from retrieval.search.fusion import FusionError
    from retrieval.search.signals import SignalError
    from retrieval.store.errors import CatalogBusy, CatalogDamaged

    return (UserError, ModelUnavailableError, CatalogBusy, ConceptError, AnchorError, NoIndexError, DiffInputError,
            IndexSettingsError, UnknownModelError, SignalError, NotADirectoryError, FileNotFoundError,
            RerankerError, FusionError, RayUnavailable, CatalogDamaged, NoCaptionerError, NotIndexedError)


@contextmanager
def user_errors():
    """Turn the engine's expected failures into one line and a non-zero exit, never a traceback."""
    try:
        yield
    except KeyboardInterrupt:
        fail("interrupted; what was committed stays indexed, run the same command to resume", 130)
    except Exception as exc:
        import duckdb

        from retrieval.store.errors import is_damage

        if isinstance(exc, _expected_errors()):
            fail(str(exc).strip() or type(exc).__name__)
        if isinstance(exc, duckdb.Error):
            if not is_damage(exc):
                raise
            fail(f"the index's catalog is damaged ({one_line(exc, 160)}); `convis repair` restores its snapshot", 1)
        if isinstance(exc, OSError):  # the system refused: a full disk, a permission, a file where a folder should be
            where = f": {exc.filename}" if exc.filename else ""
            fail(f"{exc.strerror or one_line(exc, 200)}{where}", 1)
        raise


def parse_duration(text: str | None, allow_zero: bool = False, option: str = "duration") -> float | None:
    """``80``, ``80s``, ``1m20s``, ``1:20``, ``00:02`` -> seconds."""
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
    from retrieval.engine import locate_index

    return locate_index(index_dir, *[p.parent if p.is_file() else p for p in near], Path.cwd())


def check_page(html: Optional[Path]) -> None:
    """``--html`` names a file to write; said before any work is done."""
    if html is not None and html.is_dir():
        raise UserError(f"--html {html} is a folder: give the page a file name, e.g. {html / 'results.html'}")


def check_mode(mode: str) -> None:
    from rerankers.base import MODES

    if mode not in MODES:
        raise UserError(f"--mode must be one of {', '.join(MODES)}, got {mode!r}")


DeviceOpt = Annotated[Optional[str], typer.Option(metavar="DEVICE", help="torch device (default cuda when present, "
                                                  "else cpu).")]
HtmlOpt = Annotated[Optional[Path], typer.Option("--html", metavar="FILE", help="Also write a self-contained HTML "
                                                 "page here, with thumbnails and players.")]
RerankBatchOpt = Annotated[Optional[int], typer.Option(
    min=1, metavar="N", help="Pairs per LMM forward pass (default 4); on running out of GPU memory the batch is "
    "halved and retried.")]
WHERE_HELP = ("The indexed video folder or its index folder (default: the nearest .convis at or above the "
              "current folder).")
WhereArg = Annotated[Optional[Path], typer.Argument(metavar="FOLDER", help=WHERE_HELP, show_default=False)]
IndexDirOpt = Annotated[Optional[Path], typer.Option(metavar="DIR", help="Same as FOLDER.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print as JSON.")]

def print_json(data) -> None:
    sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")


# -- index --------------------------------------------------------------------------------------
@app.command(cls=PlainUsage)
def index(
    folder: Path = typer.Argument(..., metavar="FOLDER", help="Folder of videos (searched recursively)."),
    indexer: List[str] = typer.Option([], "--indexer", "-i", help="Indexer name, name:weights, hub id or local "
                                      "folder; repeat for several. Default: what the index already uses, else "
                                      "dinov2 when its weights are available, else efficientnet-lite0."),
    index_dir: Optional[Path] = typer.Option(None, help="Where the index lives (default FOLDER/.convis)."),
    segment: Optional[str] = typer.Option(None, help="Split videos into units: fixed-length, e.g. 10s or 1m (at "
                                          f"least {MIN_SEGMENT_SECONDS:g}s); 'shots' (shot units: TransNetV2 on a "
                                          "CUDA GPU, else PySceneDetect's content detector), 'shots:transnet' or "
                                          "'shots:content'; 'off': one unit per file. Kept for later runs; a new "
                                          "way re-indexes the files whose units change (each keeps its old units "
                                          "until then)."),
    shot_min: Optional[float] = typer.Option(None, min=0, help="With --segment shots: shots shorter than this many "
                                             "seconds are merged into the previous one (default "
                                             f"{DEFAULT_SHOT_MIN_SECONDS:g})."),
    shot_max: Optional[float] = typer.Option(None, min=0, help="With --segment shots: shots longer than this many "
                                             "seconds are split into equal parts (default "
                                             f"{DEFAULT_SHOT_MAX_SECONDS:g}; 0: never split)."),
    captions: Optional[Path] = typer.Option(None, help="Folder of <video stem>.txt captions for the text indexer."),
    workers: Optional[int] = typer.Option(None, min=1, help="Decoder processes (default: half the cores; at most "
                                          f"one per core and per {WORKER_MEMORY_MB} MB of available memory)."),
    timeout: float = typer.Option(300.0, min=1, help="Seconds one decode task may take before its file is skipped; "
                                  f"a task reads a window of at most {WINDOW_FRAMES} sampled frames of one file, "
                                  "so a long video gets one such limit per window."),
    publish_every: float = typer.Option(60.0, min=0, help="Seconds between snapshots a long run publishes, so "
                                        "queries made while it runs see its progress."),
    device: DeviceOpt = None,
    trust_remote_code: bool = typer.Option(False, help="Allow checkpoints that ship their own code (internvideo)."),
    ray: Optional[str] = typer.Option(None, help="Decode and embed on Ray: 'auto' (the running cluster), "
                                      "HOST:PORT, or 'local' (start one here). Needs the ray extra."),
    faiss_index: Optional[str] = typer.Option(None, help="FAISS factory string for recall, e.g. 'HNSW32,Flat' or "
                                              "'IVF4096,Flat'; kept for later runs. Default 'auto': exact below "
                                              "100k vectors, IVF above."),
    faiss_params: Optional[str] = typer.Option(None, help="FAISS search parameters, e.g. 'nprobe=32' or "
                                               "'efSearch=128'; kept for later runs ('auto' resets)."),
    protocol: Optional[str] = typer.Option(None, help="How indexers see videos: 'fast' (default: about 1 frame "
                                           "a second, 8 a unit, decoder-scaled) or 'paper' (the ConViS-Bench "
                                           "reference's frames, pixels, weights and fp32). Kept in the index."),
    move_root: bool = typer.Option(False, help="The indexed videos moved to FOLDER: index them there (an index "
                                   "covers one folder; another is refused without this)."),
    prune: bool = typer.Option(False, help="Forget every indexed file that is gone from FOLDER, however many "
                               "(without it, a run that would forget more than half of them is refused)."),
    retry_failed: bool = typer.Option(False, help="Try again every file that failed before, unchanged since; "
                                      "without it only failures that may pass (timed out, decoder crashed, "
                                      "disk full, model error) are retried, not files that are not videos."),
    captioner: Optional[str] = typer.Option(None, help="Video LMM (any --reranker spec) that describes every unit "
                                            "once: a caption and one description per ConViS concept, 6 model "
                                            "calls a unit, stored in the index and never asked again for the "
                                            "same bytes; a text indexer embeds the captions."),
    decode_device: Optional[str] = typer.Option(None, metavar="cpu|cuda|cuda:N", help="Decode on the GPU with "
                                                "torchcodec (NVDEC); without one, decoding stays on the CPU and "
                                                "a notice says why."),
    as_json: bool = typer.Option(False, "--json", help="Print the run summary as JSON."),
):
    """Index the videos in FOLDER: sample frames, embed them, store vectors (re-runs resume, skip unchanged files)."""
    from retrieval.engine import Engine
    from retrieval.pipeline.settings import IndexSettings

    with user_errors():
        if captions is not None and not captions.is_dir():
            raise UserError(f"captions folder not found: {captions}")
        seconds, shots = _units_option(segment, shot_min, shot_max)
        settings = IndexSettings(segment_seconds=seconds, shots=shots, captions=captions, workers=workers,
                                 timeout=timeout, publish_every=publish_every, ray_address=ray,
                                 faiss_index=faiss_index, faiss_params=faiss_params, protocol=protocol,
                                 move_root=move_root, prune=prune, retry_failed=retry_failed,
                                 captioner=captioner, decode_device=decode_device)
        engine = Engine(index_dir or folder / INDEX_DIRNAME, device=device, trust_remote_code=trust_remote_code)
        with _index_progress(disable=as_json) as progress:
            report = engine.index(folder, indexer, settings, progress=progress)
    for notice in engine.notices:
        if notice not in progress.noted:  # the rest were printed before the progress bar
            _note(notice)
    report.seconds = _command_seconds(report.seconds)
    if as_json:
        print_json(report.as_dict())
    elif report.found or report.failed:
        _print_index_report(report)
    if not report.found:
        err.print(f"[yellow]warning:[/] no video files in {escape(str(folder))} (.mp4, .mov, .mkv, .webm, .avi "
                  "and other video extensions); nothing was indexed or recorded", highlight=False, soft_wrap=True)
    if not report.indexed and not report.unchanged:
        raise typer.Exit(1)  # nothing usable came out of this folder


def _units_option(segment: str | None, shot_min: float | None, shot_max: float | None):
    """(unit length, shot rule) from ``--segment`` and the shot lengths: a length, 'off' for one unit per file
    (0), or shots; (None, None) keeps the index's own."""
    from retrieval.core.segmentation import SegmentationError, ShotRule, parse_segment

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


def _command_seconds(fallback: float) -> float:
    """Seconds since this process started (the whole command, start-up included), where /proc says; else
    ``fallback``."""
    try:
        fields = Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()
        started = int(fields[19]) / os.sysconf("SC_CLK_TCK")  # field 22: start time, in ticks after boot
        return time.clock_gettime(time.CLOCK_BOOTTIME) - started
    except (OSError, ValueError, IndexError, AttributeError):  # not Linux
        return fallback


def _note(text: str) -> None:
    err.print(f"[yellow]note:[/] {escape(text)}", highlight=False, soft_wrap=True)


class _IndexProgress:
    """The run's notes, printed as they come, then a bar that appears once the run knows its files, and one
    for the captioner's pass when there is one."""

    def __init__(self, bar, describing=None):  # rich.progress.Progress bars
        self.bar, self.task, self.noted = bar, None, []
        self.describing, self.described = describing, None
        self.calls, self.seconds = 0, 0.0

    def __call__(self, event: str, data: dict) -> None:
        if event == "note":
            self.noted.append(data["text"])
            _note(data["text"])
        elif event == "start" and data["total"]:  # nothing to do: no bar
            self.bar.start()
            self.task = self.bar.add_task("index", total=data["total"], frames=0, rate="", current="")
        elif event == "describe" and self.describing is not None:
            self.stop()  # one live display at a time: the files are done
            self.describing.start()
            self.described = self.describing.add_task("describe", total=data["total"], rate="")
        elif event == "described" and self.described is not None:
            self.calls, self.seconds = self.calls + data["calls"], self.seconds + data["seconds"]
            rate = f"{self.calls / self.seconds:.2f} captions/s" if self.seconds > 0 else ""
            self.describing.update(self.described, advance=1, rate=rate)
        elif event == "file" and self.task is not None:
            self._advance(data)

    def stop(self) -> None:
        if self.task is not None:  # stopping a bar never shown would print an empty line
            self.bar.stop()
            self.task = None
        if self.described is not None:
            self.describing.stop()
            self.described = None

    def _advance(self, data: dict) -> None:
        task = self.bar.tasks[self.task]
        frames = task.fields["frames"] + data["frames"]
        rate = f"{frames / task.elapsed:.1f} frames/s" if task.elapsed else ""
        # file names are the user's: escaped, or rich would read "[bold]a.mp4" as markup
        self.bar.update(self.task, advance=1, frames=frames, rate=rate, current=escape(Path(data["path"]).name[:40]))


@contextmanager
def _index_progress(disable: bool):
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    columns = [TextColumn("[bold]indexing"), BarColumn(), MofNCompleteColumn(), TextColumn("files"),
               TextColumn("{task.fields[frames]} frames"), TextColumn("{task.fields[rate]}"), TimeElapsedColumn(),
               TextColumn("{task.fields[current]}")]
    describing = [TextColumn("[bold]describing"), BarColumn(), MofNCompleteColumn(), TextColumn("units"),
                  TextColumn("{task.fields[rate]}"), TimeElapsedColumn()]
    events = _IndexProgress(Progress(*columns, console=err, disable=disable, transient=False),
                            Progress(*describing, console=err, disable=disable, transient=False))
    try:
        yield events
    finally:
        events.stop()


def _print_index_report(report) -> None:
    failed = f"failed {len(report.failed)}"
    if report.excluded:
        failed += (f"; {report.excluded} file{'s' if report.excluded != 1 else ''} excluded (convis remove --undo "
                   "FILE to index them again)")
    if report.failed_earlier:
        failed += f" ({report.failed_earlier} unchanged since an earlier run, not retried: --retry-failed)"
    out.print(f"indexed {report.indexed} file(s), {report.units} unit(s), {report.frames} frames in "
              f"{report.seconds:.1f} s; unchanged {report.unchanged}; forgotten {report.forgotten}; {failed}"
              + (f"; captions {report.captioned}" if report.captioned else "")
              + (f"; described {report.described} unit(s) ({report.describe_calls} model calls)"
                 if report.described else ""), highlight=False)
    out.print(f"indexers: {', '.join(report.indexers)}", highlight=False, markup=False)
    if report.failed:
        table = Table(title="skipped files", title_justify="left")
        table.add_column("file", overflow="fold")
        table.add_column("reason", overflow="fold")
        for path, reason in report.failed:
            table.add_row(escape(path), escape(reason))
        out.print(table)


@app.command(cls=PlainUsage)
def describe(
    where: WhereArg = None,
    index_dir: IndexDirOpt = None,
    concept: List[str] = typer.Option([], "--concept", "-c", metavar="CONCEPT", help="A concept to describe every "
                                      "unit by, ConViS or your own ('camera angle'); repeatable. Default: a caption "
                                      "and the five ConViS concepts."),
    captioner: Optional[str] = typer.Option(None, help="Video LMM that writes the descriptions (any --reranker "
                                            "spec); default: the one the index was described with."),
    free_text: bool = typer.Option(False, "--free-text", help="Take every concept name as written, even one close to "
                                   "a ConViS concept."),
    device: DeviceOpt = None,
    trust_remote_code: bool = typer.Option(False, help="Allow custom model code from the hub."),
    as_json: bool = typer.Option(False, "--json", help="Print the run summary as JSON."),
):
    """Describe every indexed unit by more concepts (one model call a unit and concept, never asked twice) and
    embed each concept's descriptions into its own signal, which `query --concept` and `search --concept` use.
    Resumable: a killed run keeps what it wrote."""
    from retrieval.engine import Engine

    with user_errors():
        concepts = parse_concepts(concept, free_text) if concept else []
        engine = Engine(resolve_index_dir(index_dir or where), device=device, trust_remote_code=trust_remote_code)
        with _index_progress(disable=as_json) as progress:
            report = engine.describe(concepts, captioner, progress=progress)
    if as_json:
        print_json(report.as_dict())
    else:
        c = report.counts
        rate = f", {c.per_second:.2f} captions/s" if c.seconds else ""
        out.print(f"described {c.described} of {report.units} unit(s) lacking {', '.join(report.concepts)}: "
                  f"{c.calls} model calls{rate}; {report.description_vectors} description(s) embedded; "
                  f"{report.seconds:.1f} s", highlight=False, markup=False)
    if report.counts.failed:  # left for a later run, which asks for them again
        raise typer.Exit(1)


# -- query --------------------------------------------------------------------------------------
CONCEPT_HELP = ("Concept, optionally weighted by a positive number: location, main-action=0.7, 'camera angle=2'. "
                "Repeat to combine (weights normalised). The ConViS concepts (location, main-action, main-subjects, "
                "main-objects, order-of-actions) match up to case, spaces and underscores; any other name is free "
                "text, except one close to a ConViS concept ('locaton'), refused as a likely typo unless --free-text.")
FREE_TEXT_HELP = "Take every concept name as written, even one close to a ConViS concept."


@app.command(cls=PlainUsage)
def query(
    anchor: Path = typer.Option(..., "--anchor", "-a", metavar="FILE",
                                help="The video to find similar clips for (indexed or not)."),
    concept: List[str] = typer.Option([], "--concept", "-c", metavar="CONCEPT[=WEIGHT]", help=CONCEPT_HELP + " "
                                      "Required unless --change is given (then: what must stay the same; without "
                                      "it, the five ConViS concepts equally)."),
    free_text: bool = typer.Option(False, "--free-text", help=FREE_TEXT_HELP),
    change: Optional[str] = typer.Option(None, "--change", metavar="TEXT", help="Clips like the anchor but changed "
                                         "as TEXT says, e.g. \"a cup instead of a box\": every signal with a text "
                                         "tower reads it (CLIP against frames, the text indexer against captions and "
                                         "descriptions); "
                                         "each hit's total is (stay + w * change) / (1 + w)."),
    change_weight: float = typer.Option(1.0, "--change-weight", metavar="W", help="How much matching --change "
                                        "counts against staying like the anchor (w above; > 0)."),
    most_different: bool = typer.Option(False, "--most-different", help="Rank the other way: the clips that "
                                        "differ most from the anchor under the concepts first (the same scores, "
                                        "ascending; recalled as the farthest from it)."),
    k: int = typer.Option(DEFAULT_K, "-k", "--top", min=1, metavar="N", help="How many results."),
    index_dir: Optional[Path] = typer.Option(None, metavar="DIR", help="The indexed video folder or its index "
                                             "folder (default: the nearest .convis above the anchor or the "
                                             "current folder)."),
    start: Optional[str] = typer.Option(None, metavar="TIME", help=f"Use only the anchor from this time "
                                        f"({TIME_EXAMPLES})."),
    end: Optional[str] = typer.Option(None, metavar="TIME", help="Use only the anchor up to this time."),
    signal: List[str] = typer.Option([], metavar="CONCEPT=SIGNAL", help="Score a concept with one signal: an "
                                     "indexer (dinov2), its descriptions (text#location), clipscore[:MODEL] or "
                                     "vqascore[:LMM] (asked of the --rerank-top shortlist)."),
    reranker: Optional[str] = typer.Option(None, "--reranker", "-r", metavar="NAME",
                                           help="LMM that rescores the recalled "
                                           "candidates per concept (qwen2.5-vl, llava-onevision, llava-video, "
                                           "internvl, a hub id or a local folder)."),
    rerank_top: int = typer.Option(20, min=1, metavar="N", help="How many recalled candidates the reranker (or "
                                   "VQAScore) rescores."),
    mode: str = typer.Option("expected", metavar="expected|greedy",
                             help="Reranker scoring: expected (mean of P(1..5)) or greedy "
                             "(the paper's parsed single token)."),
    symmetric: bool = typer.Option(False, help="Score (a, b) and (b, a) and average them."),
    rerank_batch: RerankBatchOpt = None,
    fusion: Optional[str] = typer.Option(None, metavar="FILE|default",
                                         help="Score each concept by a learned combination of every "
                                         "available signal: a weights file from `convis bench fusion`, or "
                                         "'default' for the weights shipped with convis."),
    device: DeviceOpt = None,
    html: HtmlOpt = None,
    as_json: bool = typer.Option(False, "--json", help="Print results as JSON."),
):
    """Rank indexed clips by similarity to ANCHOR in terms of one or more concepts (and, with --change, by how
    well they show ANCHOR changed as a sentence says)."""
    from retrieval.engine import Engine
    from retrieval.search.anchor import AnchorSpanError
    from retrieval.search.compose import Change
    from retrieval.search.signals import parse_overrides

    with user_errors():
        check_page(html)
        if not concept and change is None:
            raise UserError("Missing option '--concept' / '-c' (or give --change)")
        concepts = concepts_to_score(concept, mode, free_text) if concept else check_mode(mode) or []
        changed = Change(change, change_weight) if change is not None else None
        engine = Engine(resolve_index_dir(index_dir, anchor), device=device, rerank_batch=rerank_batch)
        span = parse_duration(start, allow_zero=True, option="--start"), parse_duration(end, option="--end")
        try:
            result = engine.query(anchor, concepts, k, *span, parse_overrides(signal, free_text), reranker=reranker,
                                  rerank_top=rerank_top, mode=mode, symmetric=symmetric, fusion=fusion,
                                  change=changed, most_different=most_different)
        except AnchorSpanError as exc:  # said in the words the user typed
            raise UserError(f"--start {start} is past the end of {exc.path.name} ({exc.duration:.1f} s)") from None
        if html is not None:
            page = write_query_html(result, engine.root, html, start=span[0], end=span[1], index_dir=engine.index_dir)
            err.print(f"gallery: {page}", highlight=False)
    show(result, as_json, _print_hits)


@app.command(cls=PlainUsage)
def search(
    text: str = typer.Argument(..., metavar="TEXT", help="What to look for, in words (at most 1,000 characters)."),
    where: WhereArg = None,
    index_dir: IndexDirOpt = None,
    k: int = typer.Option(DEFAULT_K, "-k", "--top", min=1, metavar="N", help="How many results."),
    signal: List[str] = typer.Option([], metavar="INDEXER=WEIGHT", help="Use only the named signals, weighted as "
                                     "given (default: every indexed signal with a text tower, equally)."),
    concept: Optional[str] = typer.Option(None, "--concept", "-c", metavar="CONCEPT", help="Search only this "
                                          "concept's descriptions (written at index time by --captioner or "
                                          "`convis describe`), e.g. location."),
    device: DeviceOpt = None,
    html: HtmlOpt = None,
    as_json: bool = typer.Option(False, "--json", help="Print results as JSON (a query's, plus \"text\")."),
):
    """Rank indexed clips by how well they match TEXT, with every indexed signal that has a text tower
    (captions embedded by the text indexer, CLIP), or with one concept's descriptions (--concept). One
    text-tower pass per signal; no LMM is asked."""
    from retrieval.engine import Engine
    from retrieval.search.text_query import parse_weights

    with user_errors():
        check_page(html)
        weights = parse_weights(signal)
        engine = Engine(resolve_index_dir(index_dir or where), device=device)
        result = engine.search(text, k, weights, concept=concept)
        if html is not None:
            err.print(f"gallery: {write_query_html(result, engine.root, html, index_dir=engine.index_dir)}",
                      highlight=False)
    show(result, as_json, _print_hits)


def concepts_to_score(specs: List[str], mode: str, free_text: bool = False) -> list[Concept]:
    """The concepts of a query or a comparison, once the reranker's scoring mode is known to be valid."""
    concepts = parse_concepts(specs, free_text)
    check_mode(mode)
    return concepts


def show(result: QueryResult | CompareResult, as_json: bool, as_table) -> None:
    """Notes on stderr, then the result as JSON or as ``as_table`` prints it."""
    print_notices(result.notices)
    if as_json:
        print_json(result.as_dict())
    else:
        as_table(result)


def print_notices(notices) -> None:
    for notice in notices:
        err.print(f"[yellow]note:[/] {escape(notice)}", soft_wrap=True, highlight=False)


def _print_hits(result: QueryResult) -> None:
    if not result.hits:
        out.print(f"no results for {escape(_anchor_title(result))}: {escape(result.empty_reason or '')}",
                  highlight=False, soft_wrap=True)
        raise typer.Exit(1)
    weights = ", ".join(f"{c.key}={c.weight:.2f}" for c in result.concepts)
    change = result.change
    changed = f', changed: "{escape(change["text"])}" (weight {change["weight"]:g})' if change else ""
    like = "clips least like" if getattr(result, "most_different", False) else "clips like"
    table = Table(title=f"{like} {escape(_anchor_title(result))}  ({weights}){changed}", title_justify="left")
    table.add_column("rank", justify="right")
    table.add_column("clip", overflow="fold")  # long paths fold first, so scores and their signals stay readable
    table.add_column("time", justify="right", no_wrap=True)
    for c in result.concepts:  # under each concept, what scored it
        table.add_column(f"{escape(c.key)}\n[dim]{escape(_scorer_name(result.scored_by(c.key)))}[/]", justify="right")
    parts = ("stay", "change") if change else ()
    for part in parts:  # a composed query: what of the total came from staying alike, what from the change
        table.add_column(part, justify="right")
    table.add_column("total", justify="right", style="bold")
    for hit in result.hits:
        table.add_row(str(hit.rank), escape(hit.path), format_span(hit.start, hit.end),
                      *[_score(hit.scores[c.key]) for c in result.concepts],
                      *[_score(hit.composed.get(p)) for p in parts], _score(hit.total))
    out.print(table)
    if change:
        out.print(f"[dim]total = (stay + {change['weight']:g} x change) / {1 + change['weight']:g}; change: the "
                  f"change text against {', '.join(_scorer_name(s) for s in change['signals'])}[/]", highlight=False)
    recall = ", ".join(f"{c}: {_scorer_name(' + '.join([m, *filter(None, [result.beside.get(c)])]))}"
                       for c, m in result.signals.items())
    how = " + ".join(x for x in (result.reranker, result.fusion and f"fusion {result.fusion}") if x)
    scale = "; 1-5 ratings r scored (r - 1) / 4, --json keeps them" if how else ""
    out.print(f"[dim]scored by {how or 'recall similarity'} (recall: {recall}){scale}[/]", highlight=False)
    if result.beside and not how:
        out.print("[dim]a concept with two signals scores the mean of their similarities (--json: each hit's "
                  "evidence)[/]", highlight=False)
    if any(hit.contributions for hit in result.hits):
        out.print("[dim]fused scores: the average rated pair's score, plus or minus what each signal adds[/]",
                  highlight=False)
    for hit in result.hits:
        for concept in hit.contributions:
            out.print(f"[dim]  {hit.rank}. {escape(_contribution_line(hit, concept))}[/]", highlight=False)


def _anchor_title(result: QueryResult) -> str:
    """The anchor and, when the query used part of it, its window: ``long.mp4 1:00.0-1:20.0``; a text
    search's sentence in quotes."""
    if getattr(result, "text", None):
        return f'"{result.text}"'
    if result.start is None and result.end is None:
        return result.anchor
    return f"{result.anchor} {format_span(result.start or 0.0, result.end)}"


def _scorer_name(model_id: str) -> str:
    from retrieval.search.signals import scorer_label

    return scorer_label(model_id)


def _contribution_line(hit, concept: str) -> str:
    """``main-action 0.417 = 0.618 average pair - 0.190 text (similarity 0.702)``: a fused score, term by term."""
    parts, given = hit.contributions[concept], hit.inputs.get(concept, {})
    terms = " ".join(f"{'+' if v >= 0 else '-'} {abs(v):.3f} {_signal_input(name, given.get(name))}"
                     for name, v in parts.items() if name != "intercept")
    return f"{concept} {_score(hit.scores[concept])} = {parts['intercept']:.3f} average pair {terms}"


def _signal_input(signal: str, value) -> str:
    """A fusion input as a reader knows it: an indexer's similarity, or an LMM's 1-5 answer."""
    from retrieval.search.fusion import RERANKER_PREFIX

    if value is None:
        return signal
    if signal.startswith(RERANKER_PREFIX):
        return f"{signal[len(RERANKER_PREFIX):]} (answer {value:.2f} of 5)"
    return f"{signal} (similarity {value:.3f})"


def _score(value) -> str:
    return "unreadable" if value is None else f"{value:.3f}"


# -- compare ------------------------------------------------------------------------------------
@app.command(cls=PlainUsage)
def compare(
    a: Path = typer.Argument(..., metavar="A", help="First video."),
    b: Path = typer.Argument(..., metavar="B", help="Second video."),
    concept: List[str] = typer.Option(..., "--concept", "-c", metavar="CONCEPT[=WEIGHT]",
                                      help="Concept(s), optionally weighted, read as in "
                                      "query."),
    free_text: bool = typer.Option(False, "--free-text", help=FREE_TEXT_HELP),
    reranker: Optional[str] = typer.Option(None, "--reranker", "-r", metavar="NAME", help="LMM to ask (qwen2.5-vl, "
                                           "llava-onevision, ..., a hub id or a folder). Without one, the index's "
                                           "signals score the pair, as a query for A scores B (B must be indexed)."),
    signal: List[str] = typer.Option([], metavar="CONCEPT=INDEXER", help="Override the indexer used for a concept."),
    mode: str = typer.Option("expected", metavar="expected|greedy",
                             help="With --reranker: expected (mean of P(1..5)) or greedy (parsed "
                             "single token)."),
    symmetric: bool = typer.Option(False, help="With --reranker: score (a, b) and (b, a) and average them."),
    rerank_batch: RerankBatchOpt = None,
    index_dir: Optional[Path] = typer.Option(None, metavar="DIR", help="The index whose signals score the pair, "
                                             "and where an LMM's score cache is kept (default: the nearest .convis "
                                             "above A or the current folder; an LMM without one caches in the user "
                                             "cache folder)."),
    device: DeviceOpt = None,
    html: HtmlOpt = None,
    as_json: JsonOpt = False,
):
    """How similar are A and B in terms of each concept, from 0 (different) to 1 (the same)? Scored by the
    index's signals, or by an LMM's 1-5 answer (shown as 0-1) with --reranker."""
    from retrieval.engine import Engine
    from retrieval.search.signals import parse_overrides

    with user_errors():
        check_page(html)
        concepts = concepts_to_score(concept, mode, free_text)
        engine = Engine(_compare_index(index_dir, a, reranker), device=device, rerank_batch=rerank_batch)
        result = engine.compare(a, b, concepts, reranker, mode, symmetric,
                                signal_overrides=parse_overrides(signal, free_text))
        if html is not None:
            err.print(f"page: {write_compare_html(result, a, b, html)}", highlight=False)
    show(result, as_json, _print_comparison)


def _compare_index(index_dir: Optional[Path], a: Path, reranker: Optional[str]) -> Optional[Path]:
    """The index a comparison uses: its signals score the pair; an LMM only keeps its score cache there."""
    from retrieval.engine import find_index_dir

    if index_dir is not None:
        return resolve_index_dir(index_dir, a)
    found = find_index_dir(a.parent, Path.cwd())
    if found is None and reranker is None:
        raise UserError(f"no {INDEX_DIRNAME} index near {a} to score the pair with its signals; pass --index-dir "
                        "DIR, or --reranker NAME to ask an LMM (e.g. -r qwen2.5-vl)")
    return found


def _print_comparison(result: CompareResult) -> None:
    lmm = result.reranker is not None
    how = f"{result.reranker}, {result.mode}" if lmm else "the index's signals"
    table = Table(title=f"{escape(result.a)} vs {escape(result.b)}  ({how})", title_justify="left")
    columns = ("concept", "weight", "score", "LMM 1-5", "answer") if lmm else ("concept", "weight", "score", "signal")
    for col in columns:
        table.add_column(col)
    for row in result.concepts:
        extra = (_score(row.rating), row.raw) if lmm else (_scorer_name(row.signal),)
        table.add_row(row.concept.words, f"{row.concept.weight:.2f}", _score(row.score), *extra)
    table.add_row("total", "", _score(result.total), *[""] * (len(columns) - 3), style="bold")
    out.print(table)
    detail = "an LMM's 1-5 answer r scored (r - 1) / 4" if lmm else \
        f"B's unit {format_span(result.b_start, result.b_end)}, rank {result.rank} in a query for A"
    out.print(f"[dim]scored by {escape(result.scored_by)}; {detail}[/]", highlight=False)


# -- diff ---------------------------------------------------------------------------------------
@app.command(cls=PlainUsage)
def diff(
    videos: List[Path] = typer.Argument(..., metavar="A B [MORE]", help="Two clips to tell apart (A is video a, B "
                                        "video b). More than two: A is the reference and the others are ranked by "
                                        "how much they differ from it."),
    action: str = typer.Option(..., "--action", metavar="TEXT", help="What the clips show, e.g. 'barbell squat' "
                               "(VidDiff's action description)."),
    statement: List[str] = typer.Option([], "--statement", "-s", metavar="TEXT", help="Closed mode: a difference "
                                        "('wider stance'); the LMM says which clip it is more true of. Repeatable."),
    statements: Optional[Path] = typer.Option(None, "--statements", metavar="FILE", help="Closed mode: statements "
                                              "from a file, one a line ('#' lines skipped), or JSON: a list, "
                                              "{key: text} or VidDiff's {key: {\"description\": text}}."),
    open_n: Optional[int] = typer.Option(None, "--open", metavar="N", min=1, help="Open mode: the LMM proposes up "
                                         "to N differences, each with the clip it applies to; each is then asked "
                                         "in closed mode, so it carries a probability."),
    reranker: str = typer.Option(DEFAULT_DIFF_MODEL, "--reranker", "-r", metavar="NAME", help="The video LMM "
                                 "asked (qwen2.5-vl, llava-onevision, internvl, ..., a hub id or a weights folder)."),
    mode: str = typer.Option("expected", metavar="expected|greedy", help="expected: P(a) / (P(a) + P(b)) at the "
                             "answer's first token; greedy: the letter the model writes (unreadable if neither)."),
    symmetric: bool = typer.Option(False, help="Ask each statement with the clips in both orders and average "
                                   "P(a) (two model calls a statement instead of one)."),
    fps: Optional[float] = typer.Option(None, "--fps", metavar="RATE", help="Frames a second to sample each clip "
                                        "at, as VidDiff's baselines do (fitness 4, ballsports 5, diving 6, music "
                                        "1, surgery 1), at most 75 a clip. Default: the LMM family's own frames."),
    rerank_batch: RerankBatchOpt = None,
    index_dir: Optional[Path] = typer.Option(None, metavar="DIR", help="Keep the answer cache in this index "
                                             "(default: the nearest .convis above A, else the user cache folder)."),
    device: DeviceOpt = None,
    html: HtmlOpt = None,
    as_json: JsonOpt = False,
):
    """What differs between clips of the same action, and in which clip? Closed mode places given statements
    (--statement, --statements), open mode (--open N) lets the LMM list differences; with more than two clips,
    ranks the others by how much they differ from the first."""
    from retrieval.engine import Engine
    from retrieval.search.diff import gather_statements

    with user_errors():
        check_page(html)
        check_mode(mode)
        if len(videos) < 2:
            raise UserError("give two clips to compare (A B), or a reference and the clips to rank (A B C ...)")
        if open_n is not None and (statement or statements is not None):
            raise UserError("give statements (closed mode) or --open N (open mode), not both")
        given = gather_statements(statement, None if statements is None else str(statements)) \
            if open_n is None else None
        engine = Engine(_diff_index(index_dir, videos[0]), device=device, rerank_batch=rerank_batch)
        if len(videos) == 2:
            result = engine.diff(videos[0], videos[1], action, given, open_n, reranker, mode, symmetric, fps)
            if html is not None:
                err.print(f"page: {write_diff_html(result, videos[0], videos[1], html)}", highlight=False)
        else:
            with counting("candidates", len(videos) - 1, as_json) as progress:
                result = engine.diff_rank(videos[0], videos[1:], action, given, open_n, reranker, mode, symmetric,
                                          fps, progress=progress)
            if html is not None:
                err.print(f"page: {write_diff_ranking_html(result, videos[0], html)}", highlight=False)
    print_notices(result.notices)
    if as_json:
        print_json(result.to_dict())
    elif len(videos) == 2:
        _print_diff(result)
    else:
        _print_diff_ranking(result)


def _diff_index(index_dir: Optional[Path], a: Path) -> Optional[Path]:
    """Where the answer cache lives: the given index, else the nearest one, else none (the user cache folder)."""
    from retrieval.engine import find_index_dir

    return resolve_index_dir(index_dir, a) if index_dir is not None else find_index_dir(a.parent, Path.cwd())


def _print_diff(result) -> None:
    how = f"{result.model}, {result.mode}" + (", both orders" if result.symmetric else "")
    table = Table(title=f"{escape(result.a)} (a) vs {escape(result.b)} (b): {escape(result.action)}  ({escape(how)})",
                  title_justify="left")
    rows = result.verdicts if result.closed else [p.verdict for p in result.proposals]
    proposed = {} if result.closed else {p.verdict.key: p.proposed or "-" for p in result.proposals}
    for col in ("key", "statement", *(() if result.closed else ("proposed",)), "more true of", "P(a)", "P(b)",
                "answer"):
        table.add_column(col)
    for v in rows:
        table.add_row(v.key, escape(v.statement), *(() if result.closed else (proposed[v.key],)),
                      v.prediction or "undecided", _score(v.p_a), _score(None if v.p_a is None else 1 - v.p_a),
                      escape(" | ".join(repr(a.raw) for a in v.answers)))
    out.print(table)
    for problem in result.problems:
        err.print(f"[yellow]not read from the answer:[/] {escape(problem)}", soft_wrap=True, highlight=False)
    out.print(f"[dim]frames {escape(result.frames)}; {result.model_calls} model calls (the rest from the cache); "
              f"differences {result.differences:.3f} (sum of |2 P(a) - 1|)[/]", highlight=False)


def _print_diff_ranking(ranking) -> None:
    table = Table(title=f"most different from {escape(ranking.reference)}: {escape(ranking.action)}",
                  title_justify="left")
    for col in ("rank", "clip", "differences", "decided", "strongest"):
        table.add_column(col)
    for c in ranking.candidates:
        scored = [] if c.result is None else list(c.result.scored)
        top = max(scored, key=lambda v: v.strength, default=None)
        table.add_row(str(c.rank), escape(c.path), f"{c.differences:.3f}",
                      f"{sum(v.prediction is not None for v in scored)}/{len(scored)}",
                      "-" if top is None else escape(f"{top.statement} ({top.prediction or 'undecided'})"))
    out.print(table)
    out.print(f"[dim]differences: the sum over statements of |2 P(a) - 1|; {ranking.model_calls} model calls[/]",
              highlight=False)


# -- serve --------------------------------------------------------------------------------------
@app.command(cls=PlainUsage)
def serve(
    folder: WhereArg = None,
    index_dir: IndexDirOpt = None,
    host: str = typer.Option("127.0.0.1", metavar="ADDRESS", help="Address to listen on (localhost only by default)."),
    port: int = typer.Option(8000, min=1, max=65535, metavar="PORT", help="Port to listen on."),
    reranker: Optional[str] = typer.Option(None, "--reranker", "-r", metavar="NAME",
                                           help="LMM used when a request asks to rerank."),
    allowed_host: List[str] = typer.Option([], "--allowed-host", metavar="NAME", help="Also answer requests for "
                                           "this host name (repeatable); by default only loopback names and "
                                           "--host are answered, so no other site can reach the app."),
    max_upload_mb: int = typer.Option(MAX_UPLOAD_BYTES // MiB, "--max-upload-mb", min=1, metavar="MB",
                                      help="Largest anchor clip a client may upload; a bigger upload is cut off "
                                           "while it streams (413)."),
    upload_quota_mb: int = typer.Option(UPLOAD_QUOTA_BYTES // MiB, "--upload-quota-mb", min=1, metavar="MB",
                                        help="Disk space uploads may take together; past it the oldest uploads "
                                             "are removed. Uploads that are not videos are refused (415); all "
                                             "are removed when the server stops."),
    allow_writes: bool = typer.Option(False, "--allow-writes", help="Let the web app add uploaded clips to the "
                                      "index, remove files from it (never from disk) and re-index the folder; "
                                      "refused otherwise. Meant for a server on your own machine."),
):
    """Browse and query the index in a web browser; the JSON API is described at /openapi.json."""
    with user_errors():
        if upload_quota_mb < max_upload_mb:
            raise UserError(f"--upload-quota-mb ({upload_quota_mb}) must be at least --max-upload-mb "
                            f"({max_upload_mb}): the quota holds at least one upload")
        found = resolve_index_dir(index_dir or folder)
        _check_port(host, port)
        run_server(found, host, port, reranker, extra_hosts=allowed_host, max_upload=max_upload_mb << 20,
                   upload_quota=upload_quota_mb << 20, allow_writes=allow_writes)


def _check_port(host: str, port: int) -> None:
    """Fail in one line before the server starts, rather than in the web server's own log lines."""
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the server binds: TIME_WAIT is no conflict
        try:
            probe.bind((host, port))
        except OSError as exc:
            raise UserError(f"cannot listen on {host}:{port} ({exc.strerror or exc}); pass another --port "
                            "or stop what is using it") from None


# -- info ---------------------------------------------------------------------------------------
@app.command(cls=PlainUsage)
def info(
    folder: WhereArg = None,
    index_dir: IndexDirOpt = None,
    as_json: JsonOpt = False,
):
    """Show what is indexed, by which indexers, and what failed."""
    from retrieval.engine import Engine

    with user_errors():
        engine = Engine(resolve_index_dir(index_dir or folder))
        summary = engine.info()
    print_notices(engine.notices)  # e.g. a damaged catalog read from its snapshot
    if as_json:
        print_json(summary)
        return
    out.print(f"index {summary['index_dir']} of {summary['root']} (protocol {summary['protocol']})", highlight=False)
    out.print(f"files ok {summary['files_ok']}, failed {summary['files_failed']}, units {summary['units']} "
              f"({summary['units_by']})", highlight=False)
    if summary.get("shots"):
        shots = summary["shots"]
        confidence = shots["mean_cut_confidence"]
        out.print(f"  shots: {shots['cuts']} cut(s) (mean confidence "
                  f"{'n/a' if confidence is None else f'{confidence:.2f}'}), {shots['splits']} split(s) of long "
                  f"shots, mean unit {shots['mean_unit_seconds']} s", highlight=False)
    for row in summary["indexers"]:
        count = summary["vectors"].get(row["indexer"], 0)
        out.print(f"  {row['indexer']}  {row['kind']}  dim {row['dim']}  {count} vectors  faiss {row['faiss']}",
                  highlight=False)
    for signal in summary["cross_modal_signals"]:
        out.print(f"  {signal}  cross-modal (--signal CONCEPT=clipscore)", highlight=False)
    for failure in summary["failures"]:
        out.print(f"  [red]failed[/] {escape(failure['path'])}: {escape(failure['error'] or '')}", highlight=False)


@app.command(cls=PlainUsage)
def repair(
    folder: WhereArg = None,
    index_dir: IndexDirOpt = None,
    as_json: JsonOpt = False,
):
    """Restore a damaged catalog from the index's last snapshot (the damaged file is kept aside, renamed)."""
    from retrieval.engine import Engine

    with user_errors():
        where = resolve_index_dir(index_dir or folder)
        restored = Engine(where).repair()
    if as_json:
        print_json({"index_dir": str(where.resolve()), "repaired": restored is not None,
                    **({"kept_aside": str(restored.kept_aside), "snapshot_time": restored.snapshot_time,
                        "files": restored.files} if restored else {})})
        return
    out.print(str(restored) if restored else f"the catalog in {where} is whole; nothing to repair", highlight=False)


@app.command(cls=PlainUsage)
def remove(
    files: List[Path] = typer.Argument(..., metavar="FILE", help="Indexed files: paths as you see them, or "
                                       "relative to the indexed folder."),
    index_dir: Optional[Path] = typer.Option(None, metavar="DIR", help="The index folder, or the video folder "
                                             "holding it (default: the nearest .convis at or above FILE)."),
    undo: bool = typer.Option(False, "--undo", help="Let the next `convis index` run index these files again."),
    as_json: JsonOpt = False,
):
    """Remove files from the index (their vectors, units and descriptions); the files themselves stay where they
    are, and later `convis index` runs skip them; --undo lets the next run index them again."""
    from retrieval.engine import Engine

    with user_errors():
        engine = Engine(resolve_index_dir(index_dir, *files))
        # a file that exists here is named by where it is; any other path is taken relative to the indexed folder
        named = [f.resolve() if f.exists() else f for f in files]
        changed = engine.unremove(named) if undo else engine.remove(named)
    if as_json:
        print_json({"restored" if undo else "removed": changed})
        return
    if undo:
        out.print(f"the next `convis index` run indexes {len(changed)} file(s) again: {', '.join(changed)}",
                  highlight=False, markup=False)
    else:
        out.print(f"removed {len(changed)} file(s) from the index: {', '.join(changed)}; the files stay on disk "
                  "and later runs skip them (convis remove --undo FILE to index them again)",
                  highlight=False, markup=False)


@app.command("ls", cls=PlainUsage)
def list_files(
    folder: WhereArg = None,
    index_dir: IndexDirOpt = None,
    failed: bool = typer.Option(False, "--failed", help="Only the files that could not be indexed."),
    as_json: JsonOpt = False,
):
    """List the indexed files: duration, units, status (with the reason a file failed), caption."""
    from retrieval.engine import Engine

    with user_errors():
        engine = Engine(resolve_index_dir(index_dir or folder))
        files = [f for f in engine.files() if not failed or f.status != "ok"]
        root = engine.root
    print_notices(engine.notices)
    if as_json:
        print_json({"root": str(root), "files": [_listing_record(f) for f in files]})
        return
    table = Table(title=f"{len(files)} file(s) in {escape(str(root))}", title_justify="left")
    for col in ("path", "duration", "units", "status", "caption"):
        table.add_column(col, overflow="fold", justify="right" if col in ("duration", "units") else "left")
    for f in files:
        table.add_row(escape(f.path), format_time(f.duration) if f.duration is not None else "",
                      str(len(f.units)), "ok" if f.status == "ok" else f"failed: {escape(f.error or '')}",
                      "yes" if f.captioned else "")
    out.print(table)


def _listing_record(f) -> dict:
    return {"path": f.path, "status": f.status, "error": f.error, "duration": f.duration, "width": f.width,
            "height": f.height, "captioned": f.captioned,
            "units_by": f.units_by or None,
            "units": [{"segment": seg, "start": start, "end": end, **_cut_record(f, i)}
                      for i, (seg, start, end) in enumerate(f.units)]}


def _cut_record(f, i: int) -> dict:
    """A shot unit's boundary (what starts it: start, cut or split) and the cut's confidence; nothing for fixed
    units."""
    if i >= len(f.cuts) or f.cuts[i][0] is None:
        return {}
    boundary, confidence = f.cuts[i]
    return {"boundary": boundary, "confidence": None if confidence is None else round(confidence, 4)}


@app.command(cls=PlainUsage)
def models(
    protocol: str = typer.Option("fast", metavar="fast|paper", help="Show the indexers as this protocol builds "
                                 "them."),
    full: bool = typer.Option(False, "--full", help="Also show what each model is fed: frames, decode size, "
                              "pooling, precision."),
    as_json: bool = typer.Option(False, "--json", help="Print as JSON (always complete)."),
):
    """List the registered indexers, rerankers and pair signals: default weights, and what each is fed (frames,
    decode size, pooling, precision), before anything is downloaded."""
    from indexers.base import INDEXERS, PROTOCOLS
    from indexers.factory import available_indexers
    from rerankers.base import RERANKERS
    from rerankers.factory import available_rerankers
    from retrieval.core.signal_kinds import SIGNALS

    with user_errors():
        if protocol not in PROTOCOLS:
            raise UserError(f"--protocol is one of {', '.join(PROTOCOLS)}, got {protocol!r}")
    rows = [_model_row("indexer", INDEXERS.entry(n), protocol, INDEXERS.entry(n).card.get(protocol, {}))
            for n in available_indexers()]
    rows += [_model_row("reranker", RERANKERS.entry(n), None, RERANKERS.entry(n).card) for n in available_rerankers()]
    rows += [_signal_row(SIGNALS.entry(n)) for n in SIGNALS.names()]
    if as_json:
        print_json(rows)
        return
    table = Table(caption="weights: bundled (installed with a package), cached (Hugging Face cache), local folder, "
                  "download on first use, or missing (offline and not cached)", caption_justify="left")
    columns = ("kind", "name", "default", "weights", *(("frames", "size", "pooling", "dtype") if full else ()))
    for col in columns:  # names and ids never break inside a word
        table.add_column(col, no_wrap=col in ("name", "default"))
    for row in rows:
        table.add_row(*(escape(str(row.get(c, ""))) for c in columns))
    out.print(table)


def _signal_row(entry) -> dict:
    """A registered pair signal (CLIPScore, VQAScore): the model it asks by default and its definition."""
    kind = entry.builder(None)
    return {"kind": "signal", "name": entry.name, "default": kind.model or "the index's first CLIP-family indexer",
            "weights": "-", "description": kind.definition, "family": kind.family, "cost": kind.cost,
            # what it is fed is its model's: the CLIP-family indexer's frames, the LMM's own frame rule
            **{field: "its model's" for field in ("frames", "size", "pooling", "dtype")}}


def _model_row(kind: str, entry, variant: str | None, card: dict) -> dict:
    return {"kind": kind, "name": entry.name, "default": entry.source_for(variant),
            "weights": entry.weights_for(variant), "description": entry.description, **card}


class _BenchPlaceholder(TyperGroup):
    """Stands for ``bench`` in the command list; OneLineErrors.get_command swaps in the real group."""

    placeholder = True


app.add_typer(typer.Typer(), name="bench", help=BENCH_HELP, cls=_BenchPlaceholder)


def _bench_group():
    """The ``bench`` sub-app as a click group, built as ``app.add_typer(bench_app, ...)`` would build it."""
    from retrieval.cli.bench import app as bench_app  # SciPy, the perf harness: only `convis bench ...` pays for them

    holder = typer.Typer(rich_markup_mode=app.rich_markup_mode, add_completion=False)
    holder.add_typer(bench_app, name="bench", help=BENCH_HELP)
    return typer.main.get_group(holder).commands["bench"]


def run_server(*args, **kwargs) -> None:
    """retrieval.serve.server.serve, imported when a server starts (FastAPI takes a second to import)."""
    from retrieval.serve.server import serve

    serve(*args, **kwargs)


def write_query_html(*args, index_dir: Path, **kwargs) -> Path:
    """The gallery page; a file browsers cannot play links the preview `convis serve` made of it, if any."""
    from retrieval.media.preview import Previews
    from retrieval.serve.gallery import write_query_html as write  # decoders: only a page pays for them
    from retrieval.serve.playback import PREVIEWS_DIRNAME

    return write(*args, previews=Previews(index_dir / PREVIEWS_DIRNAME), **kwargs)


def write_diff_html(*args, **kwargs) -> Path:
    from retrieval.serve.gallery import write_diff_html as write

    return write(*args, **kwargs)


def write_diff_ranking_html(*args, **kwargs) -> Path:
    from retrieval.serve.gallery import write_diff_ranking_html as write

    return write(*args, **kwargs)


def write_compare_html(*args, **kwargs) -> Path:
    from retrieval.serve.gallery import write_compare_html as write

    return write(*args, **kwargs)


def _print_version(value: bool) -> None:
    if value:
        out.print(f"convis {_version()}", highlight=False)
        raise typer.Exit()


def _version() -> str:
    from importlib import metadata

    try:
        return metadata.version("convis")
    except metadata.PackageNotFoundError:  # run from a checkout that was never installed
        return "unknown (not installed)"


@app.callback()
def _options(version: bool = typer.Option(False, "--version", callback=_print_version, is_eager=True,
                                          help="Print the version and exit.")) -> None:
    """Concept-conditioned video retrieval: find clips like this one, in terms of a concept."""


def main() -> None:
    app()


if __name__ == "__main__":
    main()
