"""`convis bench perf`: measure indexing, recall and reranking speed and memory; print a markdown page (written to
a file, e.g. a docs page, only when ``--out`` names one)."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from bench.perf.sections import section_names, sections_help
from retrieval.cli.bench.common import user_errors
from retrieval.cli.console import PlainUsage

if TYPE_CHECKING:
    from bench.perf import PerfReport

# from the registry, which imports none of the harness (FAISS, DuckDB, the decoders): each section's runner is
# imported when it runs
SECTION_NAMES = section_names()
SECTIONS_HELP = sections_help()


ThreadsOpt = Annotated[Optional[str], typer.Option(
    "--torch-threads", help="Comma-separated torch thread counts to measure embedding with; 'default' is torch's "
    "choice. The last one is used for reranking.")]
RerankerOpt = Annotated[Optional[str], typer.Option(
    "--reranker", "-r", help="Reranker spec (default: a tiny random Qwen2-VL, which measures the pipeline only).")]
ShapeOpt = Annotated[Optional[str], typer.Option(
    "--shape", metavar="tiny|7b|real", help="Checkpoints of the rerank, describe and lmm sections' LMM families "
    "(Qwen2.5-VL, LLaVA-OneVision, InternVL): 'tiny' (default: random tiny models, any device; call counts) or '7b' "
    "(also called 'real': random weights in the real models' dimensions, bf16, built on the GPU; needs CUDA).")]
LongVideoOpt = Annotated[Optional[Path], typer.Option(
    "--long-video", help="Also index this one (long) video alone and report its peak memory; the scaling section "
    "decodes it with 1..N workers.")]


def _numbers(text: str | None, name: str) -> tuple[int, ...] | None:
    if text is None:
        return None
    try:
        values = tuple(int(float(v)) for v in text.replace("_", "").split(",") if v.strip())
    except ValueError:
        raise typer.BadParameter(f"{name} takes comma-separated numbers, e.g. 10000,100000") from None
    if not values or min(values) <= 0:
        raise typer.BadParameter(f"{name} takes positive numbers")
    return values


def _names(text: str | None) -> tuple[str, ...] | None:
    return None if text is None else tuple(v.strip() for v in text.split(",") if v.strip())


def _threads(text: str | None) -> tuple[int | None, ...] | None:
    """`default,1` -> (None, 1): None keeps torch's own choice."""
    if text is None:
        return None
    try:
        values = tuple(None if v == "default" else int(v) for v in _names(text) or ())
    except ValueError:
        raise typer.BadParameter("--torch-threads takes numbers or 'default', e.g. default,1") from None
    if not values or any(v is not None and v < 1 for v in values):
        raise typer.BadParameter("--torch-threads takes positive numbers or 'default'")
    return values


def perf(
    videos: Annotated[Optional[Path], typer.Option("--videos", help="Folder of clips (default: examples/videos; "
                                                   "generated clips with --smoke).")] = None,
    indexer: Annotated[str, typer.Option("--indexer", "-i", help="Indexer to embed with.")] = "efficientnet-lite0",
    decoders: Annotated[Optional[str], typer.Option("--decoders", help="Comma-separated: decord,pyav.")] = None,
    sizes: Annotated[Optional[str], typer.Option("--sizes", help="Collection sizes for recall, e.g. "
                                                 "10000,100000,1000000.")] = None,
    dim: Annotated[Optional[int], typer.Option("--dim", min=8, help="Vector dimension for recall.")] = None,
    sections: Annotated[Optional[str], typer.Option("--sections", help=SECTIONS_HELP)]
    = None,
    repeat: Annotated[Optional[int], typer.Option("--repeat", min=1, help="Runs per indexing/rerank/filter measurement "
                                                  "(the median is reported).")] = None,
    copies: Annotated[Optional[int], typer.Option("--copies", min=1, help="Index each clip this many times "
                                                  "(hard links) so start-up costs amortise.")] = None,
    torch_threads: ThreadsOpt = None,
    reranker: RerankerOpt = None,
    shape: ShapeOpt = None,
    long_video: LongVideoOpt = None,
    segment: Annotated[Optional[float], typer.Option("--segment", help="Also index the long video in segments "
                                                     "of this many seconds.")] = None,
    serve_requests: Annotated[Optional[int], typer.Option(
        "--serve-requests", min=1, help="Requests each of the serve section's 20 client threads asks.")] = None,
    from_json: Annotated[Optional[list[Path]], typer.Option(
        "--from-json", metavar="FILE", help="Measure nothing: write the markdown from reports saved with --json "
                                            "(repeat to combine runs; a later run's part replaces an earlier one's).")
    ] = None,
    out: Annotated[Optional[Path], typer.Option("--out", help="Also write the markdown to this file, e.g. "
                                                "docs/performance.md (default: printed only).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the results as JSON.")] = False,
    smoke: Annotated[bool, typer.Option("--smoke", help="A seconds-long run on tiny inputs (CI).")] = False,
) -> None:
    """Indexing throughput (ours vs decoding every frame), recall latency/quality at 10k-1M vectors, reranking
    cost with and without the score cache, and peak memory of each."""
    from bench.perf import PerfConfig, combine  # the harness: only a run pays for it
    from bench.perf.run import run

    if shape is not None and shape not in ("tiny", "7b", "real"):
        raise typer.BadParameter(f"--shape takes tiny or 7b (also called real), not {shape!r}")
    for path in (videos, long_video, *(from_json or [])):
        if path is not None and not path.exists():
            raise typer.BadParameter(f"not found: {path}")
    if from_json:
        _write(combine([_load_report(path) for path in from_json]), out, as_json)
        return
    options = dict(videos=videos, indexer=indexer, decoders=_names(decoders), sizes=_numbers(sizes, "--sizes"),
                   dim=dim, sections=_names(sections), repeat=repeat, copies=copies,
                   torch_threads=_threads(torch_threads), reranker=reranker, long_video=long_video, segment=segment,
                   serve_requests=serve_requests, shape=shape)
    config = PerfConfig.smoke_run(**options) if smoke else \
        PerfConfig(**{k: v for k, v in options.items() if v is not None})
    command = "convis bench perf " + shlex.join(sys.argv[3:] if _is_cli() else [])
    with user_errors(ValueError, RuntimeError):
        report = run(config, progress=lambda message: typer.echo(message, err=True), command=command.strip())
    _write(report, out, as_json)


def _write(report: PerfReport, out: Path | None, as_json: bool) -> None:
    from bench.perf.markdown import markdown

    text = markdown(report)
    if out is not None:  # a page is written only where asked: a run never replaces the committed docs by itself
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text)
        typer.echo(f"wrote {out}", err=True)
    typer.echo(json.dumps(report.as_dict(), indent=2, default=str) if as_json else text)


def _load_report(path: Path) -> PerfReport:
    from bench.perf import PerfReport

    try:
        return PerfReport.read(path)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise typer.BadParameter(f"{path} is not a saved `convis bench perf --json` report ({exc})") from None


def _is_cli() -> bool:
    """argv holds `... bench perf OPTIONS` when run from the command line (not from tests)."""
    return len(sys.argv) > 2 and sys.argv[1:3] == ["bench", "perf"]


def register(app: typer.Typer) -> None:
    """Add the `perf` command to the `bench` app."""
    app.command("perf", cls=PlainUsage)(perf)
