"""Command-line start-up: the demo's commands as fresh processes, and `convis serve` until it answers."""

from __future__ import annotations

from dataclasses import dataclass

from bench.perf.section import Check, Section, table
from bench.perf.targets import CLI_BASELINE, CLI_TARGETS, CliTarget


@dataclass(frozen=True)
class CliResult:
    command: str  # what was run, e.g. "convis --help"
    runs: int  # fresh processes timed
    median_s: float  # wall seconds, start to exit
    min_s: float
    max_s: float
    cpu_s: float  # median CPU seconds (user + system)
    peak_rss_mb: float  # the largest max RSS of the runs
    median_rss_mb: float = 0.0  # the median max RSS of the runs
    key: str = ""  # what the targets know the row by, e.g. "query" for the baseline (cli_session.py)


HEAD = ["command", "runs", "median s", "min s", "max s", "CPU s", "median RSS MB", "max RSS MB",
        "x indexed-anchor query"]


def _row(r: CliResult, base: CliResult | None) -> list:
    ratio = f"{r.median_s / base.median_s:.2f}x" if base is not None and base.median_s > 0 else ""
    return [f"`{r.command}`", r.runs, f"{r.median_s:.3f}", f"{r.min_s:.3f}", f"{r.max_s:.3f}", f"{r.cpu_s:.3f}",
            f"{r.median_rss_mb:.0f}", f"{r.peak_rss_mb:.0f}", ratio]


def _page(rows: list[CliResult]) -> list[str]:
    """Every command beside the baseline's median wall (an indexed anchor's query)."""
    base = next((r for r in rows if r.key == CLI_BASELINE), None)
    return ["## Command-line start-up\n", table(HEAD, [_row(r, base) for r in rows])]


def cli_checks(rows: list[CliResult]) -> list[Check]:
    base = next((r for r in rows if r.key == CLI_BASELINE), None)
    found = [cli_check(r, CLI_TARGETS[r.key], base) for r in rows if r.key in CLI_TARGETS]
    return [check for check in found if check is not None]


def cli_check(r: CliResult, target: CliTarget, base: CliResult | None) -> Check | None:
    """One row against its target; None when the target is only relative and the baseline was not measured."""
    ratio = r.median_s / base.median_s if base is not None and base.median_s > 0 else None
    wanted, met = [], True
    if target.seconds is not None:
        wanted.append(f"median <= {target.seconds:g} s")
        met &= r.median_s <= target.seconds
    if target.ratio is not None and ratio is not None:
        wanted.append(f"median <= {target.ratio:g}x the indexed-anchor query's")
        met &= ratio <= target.ratio
    if target.mb is not None:
        wanted.append(f"max RSS < {target.mb:g} MB")
        met &= r.peak_rss_mb < target.mb
    if not wanted:
        return None
    measured = (f"median {r.median_s:.3f} s of {r.runs} ({r.min_s:.3f}-{r.max_s:.3f})"
                + (f" = {ratio:.2f}x" if ratio is not None and target.ratio is not None else "")
                + f", max RSS {r.peak_rss_mb:.0f} MB")
    return f"`{r.command}`: {', '.join(wanted)}", measured, met


SECTION = Section(
    "cli", "the demo's commands on the demo index (out/demo-index, built when absent) as fresh processes: median "
           "wall seconds and RSS, and each against a query whose anchor is indexed; `convis serve` until /health "
           "answers, and its first text search once warm",
    CliResult, "bench.perf.cli_session:run_cli", _page, checks=cli_checks, needs_clips=False)
