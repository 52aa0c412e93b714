"""`bench fusion`: cross-validated per-concept fusion of signals, next to every single signal.

Mounted with ``register(app)`` on the bench typer app; ``python -m retrieval.cli.bench.fusion fusion ...`` runs it
alone. The fitting (SciPy) is imported by the functions that fit and report, so the help loads none of it.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional, Sequence

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from bench.loaders import CONVIS_CONCEPTS, SIMILARITIES_SUFFIX, BenchDataError, discover, load_gt_pairs
from retrieval.cli.bench.common import user_errors
from retrieval.cli.console import PlainUsage, fail

if TYPE_CHECKING:
    from bench.fusion import CvResult
    from bench.fusion_train import FusionModel, PairTable

HELP = "Learn per-concept weights of signals and compare the fused score with each signal (k-fold CV)."


def register(app: typer.Typer) -> None:
    """Add the `fusion` command to a typer app (the `bench` sub-app)."""
    app.command("fusion", help=HELP, cls=PlainUsage)(fusion)


def fusion(
    gt: Annotated[Path, typer.Option("--gt", help="Human ratings: gt_conditioned_similarities.json.")],
    signals: Annotated[
        Optional[list[Path]],
        typer.Option("--signals", "-s", help="Pair-score file, or folder searched for *_similarities.json."),
    ] = None,
    paths: Annotated[Optional[list[Path]], typer.Argument(help="More score files or folders.",
                                                          show_default=False)] = None,
    folds: Annotated[int, typer.Option("--folds", min=2, help="Outer cross-validation folds.")] = 10,
    group_by_video: Annotated[bool, typer.Option(
        "--group-by-video", help="Folds by video: no video has pairs on both sides of a fold.")] = False,
    both: Annotated[bool, typer.Option("--both", help="Report random-pair and grouped-by-video folds.")] = False,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the fold assignment.")] = 0,
    inner_folds: Annotated[int, typer.Option(
        "--inner-folds", min=2, help="Folds inside each training part that choose normaliser and penalty.")] = 5,
    use: Annotated[Optional[list[str]], typer.Option(
        "--use", help="Only these signals (repeatable), e.g. dinov2, text, reranker:llava-onevision.")] = None,
    query_time: Annotated[bool, typer.Option(
        "--query-time", help="Only signals convis computes at query time (indexer cosines, rerankers).")] = False,
    out: Annotated[Optional[Path], typer.Option(
        "--out", help="Write weights fitted on ALL pairs (in-sample) to this JSON file.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the results as JSON instead of tables.")] = False,
) -> None:
    """Cross-validated Spearman/Kendall of the fused score per concept, learned weights, a weights file."""
    from bench.fusion import cross_validate
    from bench.fusion_train import FusionError, fit_fusion, save_fusion

    with user_errors(FusionError):
        table = _table(gt, [*(signals or []), *(paths or [])], use, query_time)
        concepts = [c for c in table.labels if table.columns[c]]
        splits = [False, True] if both else [group_by_video]
        results = [cross_validate(table, concepts, folds, seed, g, inner_folds) for g in splits]
        model = fit_fusion(table, concepts, inner_folds=inner_folds, seed=seed, group_by_video=group_by_video or both,
                           meta=_meta(gt, table, results, folds, seed))
        if out:
            save_fusion(model, out)
    _emit(table, results, model, out, as_json, gt)


def _table(gt: Path, paths: Sequence[Path], use: list[str] | None, query_time: bool) -> PairTable:
    from bench.fusion import build_table, query_time_signals

    if not paths:
        fail(f"give at least one --signals PATH (a score file or a folder to search for *{SIMILARITIES_SUFFIX})")
    table = build_table(discover(paths, SIMILARITIES_SUFFIX), load_gt_pairs(gt))
    present = {s for cols in table.columns.values() for s in cols}
    keep = set(present)
    if use:
        unknown = sorted(set(use) - present)
        if unknown:
            raise BenchDataError(f"--use {', '.join(unknown)}: no such signal; found {', '.join(sorted(present))}")
        keep &= set(use)
    if query_time:
        keep &= query_time_signals()
    if not keep:
        raise BenchDataError("no signal left to fuse after --use/--query-time")
    return table.restrict(keep)


def _meta(gt: Path, table: PairTable, results: list[CvResult], folds: int, seed: int) -> dict:
    """What the weights file records about its fit: in-sample on every pair, and the held-out CV numbers."""
    from bench.fusion import margins

    summary = {f"{split}/{concept}": m for (split, concept), m in margins(r for x in results for r in x.rows).items()}
    return {
        "fitted_on": f"all {len(table.pairs)} rated pairs of {gt.name} (in-sample); "
                     "cv holds the held-out numbers",
        "signals": {c: sorted(cols) for c, cols in table.columns.items()},
        "cv": {"folds": folds, "seed": seed, "summary": summary},
    }


# ---------------------------------------------------------------- output


def _emit(table: PairTable, results: list[CvResult], model: FusionModel, out: Path | None, as_json: bool,
          gt: Path) -> None:
    from bench.fusion import weight_records

    weights = weight_records(model)
    if as_json:
        typer.echo(_json(results, weights, model, out, gt))
    else:
        console = Console()
        for concept in model.concepts:
            console.print(_concept_table(concept, results))
        console.print(_summary_table(results))
        console.print(_weights_table(weights))
    if out:
        typer.echo(f"wrote {out}: weights fitted on all {len(table.pairs)} pairs (in-sample)", err=True)


def _json(results: list[CvResult], weights: dict, model: FusionModel, out: Path | None, gt: Path) -> str:
    from bench.fusion import margins
    from bench.fusion_train import finite

    data = {
        "gt": str(gt),
        "folds": results[0].folds,
        "seed": results[0].seed,
        "splits": [r.split for r in results],
        "train_pairs": {r.split: r.train_sizes for r in results},
        "results": [row.record() for r in results for row in r.rows],
        "summary": [{"split": s, "concept": c, **m}
                    for (s, c), m in margins(row for r in results for row in r.rows).items()],
        "fold_choices": {r.split: r.choices for r in results},
        "weights": weights,
        "final_choices": model.meta.get("choices", {}),
        "out": str(out) if out else None,
    }
    return json.dumps(finite(data), indent=2, allow_nan=False)


def _fmt(value: float | None) -> str:
    return "n/a" if value is None or not math.isfinite(value) else f"{value:.2f}"


def _concept_table(concept: str, results: list[CvResult]) -> Table:
    from bench.fusion import FUSED

    folds = results[0].folds
    t = Table(title=f"{CONVIS_CONCEPTS.get(concept, concept)}: {folds}-fold CV, held-out pairs only (x100)",
              caption="rho/tau over all held-out pairs pooled; fold rho = mean +- sd of per-fold rho; "
                      "won = folds where fused beats the best single signal",
              title_justify="left", caption_justify="left")
    t.add_column("signal")
    for r in results:
        for name in ("rho", "tau", "fold rho"):
            t.add_column(f"{name} ({r.split})", justify="right")
    t.add_column(f"won ({' / '.join(r.split for r in results)})", justify="right")
    by_split = [{row.signal: row for row in r.rows if row.concept == concept} for r in results]
    for signal in by_split[0]:
        cells = []
        for rows in by_split:
            row = rows[signal]
            cells += [_fmt(row.rho), _fmt(row.tau), f"{_fmt(row.fold_rho)} +- {_fmt(row.fold_sd)}"]
        won = " / ".join(f"{rows[signal].folds_won}/{folds}" for rows in by_split if signal == FUSED)
        name = f"[bold]{signal}[/bold]" if signal == FUSED else escape(signal)
        t.add_row(name, *cells, won)
    return t


def _summary_table(results: list[CvResult]) -> Table:
    from bench.fusion import margins

    t = Table(title="Fused vs best single signal (Spearman rho x100, held-out)", title_justify="left")
    t.add_column("concept")
    t.add_column("best single")
    t.add_column("rho", justify="right")
    found = margins(row for r in results for row in r.rows)
    for r in results:
        t.add_column(f"fused ({r.split})", justify="right")
        t.add_column("margin", justify="right")
    for concept in dict.fromkeys(c for _, c in found):
        first = found[(results[0].split, concept)]
        cells = [escape(str(first["best_signal"])), _fmt(first["best_rho"])]
        for r in results:
            m = found[(r.split, concept)]
            cells += [_fmt(m["fused_rho"]), f"{m['margin']:+.2f}" if math.isfinite(m["margin"]) else "n/a"]
        t.add_row(CONVIS_CONCEPTS.get(concept, concept), *cells)
    return t


def _weights_table(weights: dict[str, dict]) -> Table:
    t = Table(title="Learned weights (human-score points per SD of the normalised signal), fitted on all pairs",
              caption="score = intercept + sum of weight x z-scored normalised signal; "
                      "0 = the non-negative ridge left it out; blank = not in that concept's model "
                      "(no such file, or constant after normalisation)",
              title_justify="left", caption_justify="left")
    t.add_column("")
    for concept in weights:
        t.add_column(CONVIS_CONCEPTS.get(concept, concept), justify="right")
    t.add_row("normaliser", *(w["normaliser"] for w in weights.values()))
    t.add_row("alpha", *(f"{w['alpha']:g}" for w in weights.values()))
    t.add_row("intercept", *(f"{w['intercept']:.3f}" for w in weights.values()), end_section=True)
    for signal in dict.fromkeys(s for w in weights.values() for s in w["weights"]):
        t.add_row(escape(signal), *(f"{w['weights'][signal]:.3f}" if signal in w["weights"] else ""
                                    for w in weights.values()))
    return t


def _main() -> None:
    app = typer.Typer(add_completion=False, no_args_is_help=True)
    register(app)

    @app.callback()
    def _root() -> None:
        """ConViS-Bench concept fusion."""

    app()


if __name__ == "__main__":
    _main()
