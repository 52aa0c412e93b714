"""`convis bench viddiff`: score VidDiff predictions with the benchmark's own rules (closed accuracy, open recall).

Mounted with ``register(app)`` on the bench typer app. ``viddiff`` is a command group that scores when no
sub-command is named, so ``convis bench viddiff --gt DATASET --pred PRED.json`` works and sub-commands (such as
one producing the predictions with convis) can be added with ``@viddiff_app.command(...)``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Optional

import typer

from bench.viddiff.run import FRAME_CHOICES
from retrieval.cli.bench.common import JsonOpt, user_errors
from retrieval.cli.console import PlainUsage, counting, fail, note
from retrieval.cli.options import DEFAULT_DIFF_MODEL

HELP = ("Score VidDiff predictions against a VidDiffBench-shaped dataset as the benchmark's eval_viddiff.py does: "
        "closed accuracy over differences labelled 'a'/'b', or open recall after a judge matches descriptions.")
MODES = ("closed", "open")
SHOWN = 5  # per-sample problems listed before the rest are counted

viddiff_app = typer.Typer(name="viddiff", help=HELP, invoke_without_command=True, add_completion=False)


DatasetOpt = Annotated[Optional[Path], typer.Option(
    "--gt", metavar="DATASET", help="VidDiffBench-shaped folder (dataset.jsonl, dataset.json or test.jsonl, videos "
    "beside it) or the rows file itself.")]
PredOpt = Annotated[Optional[Path], typer.Option(
    "--pred", metavar="PRED.json", help="Predictions: {sample_key: {diff_key: 'a'|'b' or {description, prediction}}}, "
    "or a list in dataset order.")]


@viddiff_app.callback()
def viddiff(
    ctx: typer.Context,
    gt: DatasetOpt = None,
    pred: PredOpt = None,
    mode: Annotated[Optional[str], typer.Option(
        "--mode", metavar="closed|open", help="Default: detected from the predictions (letters: closed; "
        "{description, prediction} objects: open).")] = None,
    judge: Annotated[str, typer.Option(
        "--judge", metavar="lmm:SPEC|sbert[:T]", help="Open mode's matcher: a local video LMM (lmm:SPEC) asked "
        "VidDiff's matching prompt, or MiniLM similarity with threshold T (default 0.5).")] = "lmm:qwen2.5-vl",
    device: Annotated[Optional[str], typer.Option("--device", help="torch device for the judge.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Score a VidDiff predictions file."""
    if ctx.invoked_subcommand is not None:  # a sub-command takes over
        return
    if gt is None or pred is None:
        fail("give --gt DATASET and --pred PRED.json")
    if mode is not None and mode not in MODES:
        fail(f"--mode is closed or open, got {mode!r}")
    from bench.viddiff import data  # only when scoring
    from bench.viddiff.judge import make_judge
    from bench.viddiff.metrics import check, closed_accuracy

    with user_errors():
        samples = data.read_dataset(gt)
        predictions, absent, unknown = data.align_predictions(samples, data.read_predictions(pred), str(pred))
        chosen = mode or data.detect_mode(predictions)
        check(samples, predictions, chosen)
        the_judge = make_judge(judge, device) if chosen == "open" else None
    note(f"mode: {chosen}" + ("" if mode else " (detected from the predictions)"))
    _report_inputs(samples, absent, unknown, pred)
    if the_judge is None:
        with user_errors():
            result = closed_accuracy(samples, predictions)
    else:
        result = _score_open(samples, predictions, the_judge)
    meta = {"gt": str(gt), "predictions": str(pred), "mode_detected": mode is None, "samples": len(samples),
            "samples_without_predictions": absent, "unknown_sample_keys": unknown,
            "dataset_problems": {s.sample_key: list(s.problems) for s in samples if s.problems}}
    if as_json:
        typer.echo(json.dumps({**meta, **result}, indent=2))
    else:
        _print(result)


def _score_open(samples, predictions, the_judge) -> dict:
    from bench.viddiff.judge import score_open

    with user_errors():
        result = score_open(samples, predictions, the_judge, note)
    note(result["comparability"])
    return result


def _listed(lines: list[str]) -> None:
    for line in lines[:SHOWN]:
        note(line)
    if len(lines) > SHOWN:
        note(f"... and {len(lines) - SHOWN} more")


def _report_inputs(samples, absent: list[str], unknown: list[str], pred: Path) -> None:
    """What in the inputs does not line up, on stderr: it changes what the numbers mean."""
    _listed([f"sample {s.sample_key}: {p}" for s in samples for p in s.problems])
    if absent:
        note(f"{len(absent)} of {len(samples)} samples have no predictions in {pred}; their differences count "
             f"as wrong: {', '.join(absent[:SHOWN])}{', ...' if len(absent) > SHOWN else ''}")
    if unknown:
        note(f"{len(unknown)} prediction entries name no sample of the dataset and are ignored: "
             f"{', '.join(unknown[:SHOWN])}{', ...' if len(unknown) > SHOWN else ''}")


def _print(result: dict) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"VidDiff {result['mode']}: {result['metric']} (%)")
    for name, justify in (("group", "left"), ("name", "left"), (result["metric"], "right"),
                          ("correct / scored", "right")):
        table.add_column(name, justify=justify)
    for group, label in (("overall", None), ("by_split", "split"), ("by_domain", "domain"),
                         ("by_action", "action")):
        rows = {"all": result[group]} if label is None else result[group]
        for name, g in rows.items():
            table.add_row(label or "overall", name, f"{g['value']:.2f}", f"{g['correct']} / {g['scored']}")
    for key, value in _counts(result):
        table.add_row("count", key, str(value), "")
    Console().print(table)
    if result["mode"] == "open":
        typer.echo(f"judge: {result['judge']}; reverse-statement check: {result['reverse_statement_check']}")
        typer.echo(f"NOTE: {result['comparability']}")


def _counts(result: dict) -> list[tuple[str, str]]:
    if result["mode"] == "closed":
        keys = ("missing_predictions", "extra_keys", "invalid_letters", "c_predictions")
        return [(k.replace("_", " "), result[k]) for k in keys]
    errors = [(k, f"{v:.2f}") for k, v in result["errors"].items()]
    keys = ("unmatched", "invalid_letters", "truncated_samples")
    return errors + [(k.replace("_", " "), result[k]) for k in keys]


def register(app: typer.Typer) -> None:
    """Add the `viddiff` command group to a typer app (the `bench` sub-app)."""
    app.add_typer(viddiff_app, name="viddiff")


@viddiff_app.command("run", cls=PlainUsage)
def run(
    dataset: Annotated[Path, typer.Option("--dataset", metavar="DIR", help="VidDiffBench-shaped folder: "
                                          "dataset.jsonl (or dataset.json, test.jsonl) and the videos it names.")],
    out: Annotated[Path, typer.Option("--out", metavar="DIR", help="Where predictions_<mode>.json and "
                                      "details_<mode>.json are written.")] = Path("viddiff-run"),
    mode: Annotated[str, typer.Option("--mode", metavar="closed|open")] = "closed",
    reranker: Annotated[str, typer.Option("--reranker", "-r", metavar="NAME", help="The video LMM asked.")]
    = DEFAULT_DIFF_MODEL,
    scoring: Annotated[str, typer.Option("--scoring", metavar="expected|greedy", help="expected: P(a) / (P(a) + "
                                         "P(b)); greedy: the letter written.")] = "expected",
    symmetric: Annotated[bool, typer.Option(help="Ask each statement with the videos in both orders.")] = False,
    frames: Annotated[str, typer.Option("--frames", metavar="domain|family", help="domain: each domain's rate as "
                                        "VidDiff's baselines (fitness 4 fps, ballsports 5, diving 6, music 1, "
                                        "surgery 1); family: the LMM family's own frame rule.")] = "domain",
    index_dir: Annotated[Optional[Path], typer.Option("--index-dir", metavar="DIR", help="Keep the answer cache "
                                                      "in this index (default: the user cache folder).")] = None,
    device: Annotated[Optional[str], typer.Option("--device", help="torch device.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Run convis's `diff` on every sample of a VidDiffBench-shaped folder and write predictions in its format
    (closed mode: accuracy printed too, with why it is not comparable with VidDiff's leaderboard; open mode: score
    them with `convis bench viddiff --pred`)."""
    if mode not in MODES:
        fail(f"--mode is closed or open, got {mode!r}")
    if frames not in FRAME_CHOICES:
        fail(f"--frames is domain or family, got {frames!r}")
    from bench.viddiff import data
    from bench.viddiff.metrics import closed_accuracy
    from bench.viddiff.run import Asking, RunOutput, closed_comparability, run_samples, write_outputs
    from retrieval.api import Engine

    result, asking = RunOutput(), Asking(mode, reranker, scoring, symmetric, frames)
    comparability = closed_comparability(asking) if mode == "closed" else None
    with user_errors():
        samples = data.read_dataset(dataset)
        engine = Engine(index_dir, device=device)
        try:
            with counting("samples", len(samples), as_json) as progress:
                run_samples(engine, samples, asking, progress, result)
        finally:  # what was asked before a failure is kept
            paths = write_outputs(result, out, mode, comparability)
    _listed([f"sample {key} skipped: {why}" for key, why in result.skipped.items()])
    summary = {"dataset": str(dataset), "mode": mode, "samples": len(samples), "asked": len(result.predictions),
               "skipped": len(result.skipped), "model_calls": result.model_calls,
               **{k: str(v) for k, v in paths.items()}}
    if mode == "closed":  # over every sample, as VidDiff scores: a skipped sample's differences count as wrong
        with user_errors():
            summary["accuracy"] = closed_accuracy(samples, [result.predictions.get(s.sample_key, {})
                                                            for s in samples])
        summary["comparability"] = comparability
    if as_json:
        typer.echo(json.dumps(summary, indent=2))
        return
    typer.echo(f"{summary['asked']} of {len(samples)} samples asked, {result.model_calls} model calls; "
               f"predictions: {paths['predictions']}")
    if mode == "closed":
        _print(summary["accuracy"])
        typer.echo(f"NOTE: {comparability}")

