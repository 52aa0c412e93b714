"""`convis bench correlation|retrieval|make-split|run`: reproduce ConViS-Bench correlation and retrieval numbers
from released-format files, or run convis on a ConViS-Bench folder.

Mounted with ``register(app)`` on the bench typer app.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Callable, Optional

import typer

# the help needs the file suffixes alone: the metrics (SciPy), reports and runs load when a command runs
from bench.loaders import RANKING_SUFFIX, SIMILARITIES_SUFFIX, discover, load_gt_pairs, load_ranked
from retrieval.cli.bench.common import GtPairsOpt, JsonOpt, MorePaths, SimilaritiesOpt, user_errors
from retrieval.cli.console import PlainUsage, fail, note
from retrieval.cli.options import check_mode, rerank_batch_option

if TYPE_CHECKING:
    from bench.loaders import ScoreFile

CsvOpt = Annotated[Optional[Path], typer.Option("--csv", help="Also write the results to this CSV file.")]
ChartOpt = Annotated[Optional[Path], typer.Option("--chart", help="Also draw a PNG bar chart to this file.")]
RunBatchOpt = rerank_batch_option("1 under --protocol paper, as the reference asked; else the family's, 4; more than "
                                  "1 is named in the model's folder, e.g. -b4")
# missing weights, unknown models and lock conflicts (ConvisErrors) and a bad value are user errors too when a
# command runs models
MODEL_ERRORS = (ValueError,)


def register(app: typer.Typer) -> None:
    """Add the `correlation`, `retrieval`, `make-split` and `run` commands to a typer app (the `bench` sub-app)."""
    app.command(cls=PlainUsage)(correlation)
    app.command(cls=PlainUsage)(retrieval)
    app.command("make-split", cls=PlainUsage)(make_split_command)
    app.command(cls=PlainUsage)(run)


def _emit(rows: list, tables: list, as_json: bool, csv_path: Path | None, chart: Path | None,
          metrics: dict[str, str], title: str, meta: dict) -> None:
    from rich.console import Console

    from bench import report

    records = report.records(rows)
    if as_json:
        typer.echo(report.to_json({**meta, **report.json_notes(rows), "results": records}))
    else:
        console = Console()
        for table in tables:
            console.print(table)
    if csv_path:
        report.write_csv(csv_path, records)
        note(f"wrote {csv_path}")
    if chart:
        report.bar_chart(chart, records, metrics, title)
        note(f"wrote {chart}")


def _score_files(first: list[Path] | None, more: list[Path] | None, suffix: str, option: str) -> list[ScoreFile]:
    paths = [*(first or []), *(more or [])]
    if not paths:
        fail(f"give at least one {option} PATH (a score file or a folder to search for *{suffix})")
    return discover(paths, suffix)


def _evaluate(files: Callable[[], list[ScoreFile]], rows_of: Callable[[list[ScoreFile]], list],
              tables_of: Callable[[list], list], out: dict, metrics: dict[str, str], title: str, meta: dict) -> None:
    """Score files in, metric rows out as tables/JSON/CSV/chart (``out``: as_json, csv_path, chart)."""
    with user_errors():
        rows = rows_of(files())
        _emit(rows, tables_of(rows), out["as_json"], out["csv_path"], out["chart"], metrics, title, meta)


def correlation(
    gt: GtPairsOpt,
    similarities: SimilaritiesOpt = None,
    paths: MorePaths = None,
    as_json: JsonOpt = False,
    csv_path: CsvOpt = None,
    chart: ChartOpt = None,
) -> None:
    """Spearman rho and Kendall tau of pair scores against the human ratings (paper Tables 2 and 3)."""
    from bench import report
    from bench.evaluate import correlation_rows

    _evaluate(lambda: _score_files(similarities, paths, SIMILARITIES_SUFFIX, "--similarities"),
              lambda files: correlation_rows(files, load_gt_pairs(gt)), report.correlation_tables,
              {"as_json": as_json, "csv_path": csv_path, "chart": chart},
              {"rho": "Spearman rho x100", "tau": "Kendall tau x100"}, "Correlation with human ratings",
              {"gt": str(gt)})


def retrieval(
    gt: Annotated[Path, typer.Option(
        "--gt", help="Human partial orders in ranked.json format, e.g. from `make-split`.")],
    scores: Annotated[Optional[list[Path]], typer.Option(
        "--scores", "-s", help=f"Retrieval score file, or folder searched for *{RANKING_SUFFIX}.")] = None,
    paths: MorePaths = None,
    as_json: JsonOpt = False,
    csv_path: CsvOpt = None,
    chart: ChartOpt = None,
) -> None:
    """Top-1 recall, precision and F1 with ties (paper Table 4), plus bottom-1, tau and convis's own NDCG."""
    from bench import report
    from bench.evaluate import random_rows, retrieval_rows

    def rows_of(files: list[ScoreFile]) -> list:
        human = load_ranked(gt)
        rows = retrieval_rows(files, human)
        return rows + random_rows(human, rows)

    _evaluate(lambda: _score_files(scores, paths, RANKING_SUFFIX, "--scores"), rows_of, report.retrieval_tables,
              {"as_json": as_json, "csv_path": csv_path, "chart": chart},
              {"recall": "R@1 x100", "precision": "P@1 x100", "f1": "F1@1 x100"}, "Retrieval at 1",
              {"gt": str(gt)})


def make_split_command(
    pairs: Annotated[Path, typer.Option("--pairs", help="Human ratings: gt_conditioned_similarities.json.")],
    out: Annotated[Path, typer.Option("--out", help="Where to write the split (ranked.json format).")],
) -> None:
    """Build a retrieval split from the pair ratings: anchors rated against 2+ partners, relevance = mean to 0.5."""
    from bench import report
    from bench.split import make_split

    with user_errors():
        split = make_split(load_gt_pairs(pairs))
        if not split:
            fail(f"{pairs}: no video is rated against two or more partners; nothing to rank")
        report.write_json(out, split)
    sizes = [len(next(v for k, v in e.items() if k != "anchor")) for e in split]
    typer.echo(f"wrote {out}: {len(split)} anchors, {min(sizes)}-{max(sizes)} candidates each")


# `run`'s options: each help says what a run with it reproduces
DatasetOpt = Annotated[Path, typer.Option("--dataset", help="ConViS-Bench folder: videos, "
                                          "gt_conditioned_similarities.json, optional to_be_ranked.json, "
                                          "ranked.json and captions/.")]
RunOutOpt = Annotated[Path, typer.Option("--out", help="Where scores and indices go.")]
RunIndexerOpt = Annotated[Optional[list[str]], typer.Option("--indexer", "-i", help="Indexer(s) for the global "
                                                            "signal; repeat for several.")]
RunRerankerOpt = Annotated[Optional[str], typer.Option("--reranker", "-r", help="LMM for the concept-conditioned "
                                                       "scores (name, hub id or folder).")]
FramesOpt = Annotated[Optional[str], typer.Option("--frames", help="Frames per video, or a sweep like "
                                                  "1,2,4,8,16 (paper Figure 3). Default: each model's own.")]
RunModeOpt = Annotated[Optional[str], typer.Option("--mode", metavar="expected|greedy", help="Reranker scoring. "
                                                   "Default: greedy under --protocol paper (one greedy token, read "
                                                   "as the reference's code reads it, 6-9 included; its InternVL "
                                                   "sampled instead, which no mode repeats), else expected. A mode, "
                                                   "--symmetric, a precision other than the family's paper one or a "
                                                   "batch over 1 is named in the model's folder (-expected, -sym, "
                                                   "-bf16, -b4): only a run as the paper's is printed beside its "
                                                   "value.")]
SymmetricOpt = Annotated[bool, typer.Option("--symmetric", help="Average (a, b) and (b, a).")]
CaptionsOpt = Annotated[Optional[Path], typer.Option("--captions", help="Caption folder for the text-to-text "
                                                     "and cross-modal signals (default: DATASET/captions).")]
CaptionerOpt = Annotated[Optional[str], typer.Option("--captioner", help="Video LMM that captions every video "
                                                     "(\"Describe this video in detail.\", the reference's request) "
                                                     "instead of reading caption files; with --protocol paper as "
                                                     "the reference's captioner did (frames, pixels, decoding, "
                                                     "token budget; sampled ones seeded), else greedily from the "
                                                     "family's reranking frames.")]
VqaScoreOpt = Annotated[Optional[str], typer.Option("--vqascore", help="Video LMM for the VQAScore signal "
                                                    "(default: the --captioner; 'none' to skip).")]
WorkersOpt = Annotated[Optional[int], typer.Option("--workers", min=1, help="Decoder processes.")]
DeviceOpt = Annotated[Optional[str], typer.Option("--device", help="torch device.")]
ProtocolOpt = Annotated[str, typer.Option("--protocol", help="How models see the videos: 'paper' (indexers: the "
                                          "reference's frames, pixels, weights and fp32, reproducing Table 3; the "
                                          "captioner, VQAScore and reranker LMMs: the family's paper precision, "
                                          "one request a forward pass, llava-video refused; the reranker: its "
                                          "greedy answer) or 'fast' (convis's default).")]


def run(dataset: DatasetOpt, out: RunOutOpt = Path("out/bench-run"), indexer: RunIndexerOpt = None,
        reranker: RunRerankerOpt = None, frames: FramesOpt = None, mode: RunModeOpt = None,
        symmetric: SymmetricOpt = False, rerank_batch: RunBatchOpt = None, captions: CaptionsOpt = None,
        captioner: CaptionerOpt = None, vqascore: VqaScoreOpt = None, workers: WorkersOpt = None,
        device: DeviceOpt = None, protocol: ProtocolOpt = "fast", as_json: JsonOpt = False, csv_path: CsvOpt = None,
        chart: ChartOpt = None) -> None:
    """Run convis on a ConViS-Bench folder: every Table 3 signal (video-to-video, text-to-text, cross-modal) and
    the LMM's concept scores, written in the released formats and evaluated."""
    from bench import report
    from bench.evaluate import correlation_rows, random_rows, retrieval_rows
    from bench.run import BenchRun, load_dataset
    from retrieval.api import PROTOCOLS

    if protocol not in PROTOCOLS:
        fail(f"--protocol is one of {', '.join(PROTOCOLS)}, got {protocol!r}")
    with user_errors(*MODEL_ERRORS):
        if mode is not None:
            check_mode(mode)  # before any model loads
        counts = _frame_counts(frames)
        data = load_dataset(dataset, captions)
        note(f"{len(data.pairs)} rated pairs, {len(data.videos)} videos, {len(data.split)} retrieval anchors "
              f"({data.human_source})")
        rows, retrieval_rows_ = [], []
        for count in counts:
            result = BenchRun(data, out, list(indexer or ["efficientnet-lite0"]), reranker, count, mode,
                              symmetric, workers, device, note, protocol, captioner,
                              _vqa_model(vqascore, captioner), rerank_batch).run()
            for path, reason in result.failed_videos:
                note(f"skipped {path}: {reason}")
            # a non-default frame count is part of each model's folder name, so sweep rows stay apart
            rows += correlation_rows(_of(result.files, SIMILARITIES_SUFFIX), data.pairs)
            retrieval_rows_ += retrieval_rows(_of(result.files, RANKING_SUFFIX), data.human)
        retrieval_rows_ += random_rows(data.human, retrieval_rows_)
        tables = report.correlation_tables(rows) + report.retrieval_tables(retrieval_rows_)
        _emit(rows + retrieval_rows_, tables, as_json, csv_path, chart,
              {"rho": "Spearman rho x100", "tau": "Kendall tau x100"}, "convis on ConViS-Bench",
              {"dataset": str(dataset), "out": str(out), "retrieval_ground_truth": data.human_source})


def _vqa_model(vqascore: str | None, captioner: str | None) -> str | None:
    """The LMM VQAScore asks: the one named, else the captioner; 'none' turns the signal off."""
    if vqascore is not None and vqascore.strip().lower() == "none":
        return None
    return vqascore or captioner


def _frame_counts(text: str | None) -> list[int | None]:
    if text is None:
        return [None]
    try:
        counts = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        fail(f"--frames takes whole numbers like 8 or 1,2,4,8,16, got {text!r}")
    if not counts or min(counts) < 1:
        fail(f"--frames takes whole numbers >= 1, got {text!r}")
    return counts


def _of(files: list[ScoreFile], suffix: str) -> list[ScoreFile]:
    return [f for f in files if f.path.name.endswith(suffix)]
