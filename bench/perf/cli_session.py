"""The command line as the demo uses it, on the demo index (out/demo-index, built when absent): each command as
fresh processes, and how its wall time compares with a query whose anchor is indexed (the baseline: it reads the
catalog, hashes the file and searches FAISS, so what a command costs beyond it is what it imports and builds).

Besides the commands of one process: a windowed anchor query first (on a fresh copy of the index) and again,
`convis diff` without weights (the time to its refusal), `convis serve` (serve_start.py) and a re-index that finds
nothing to do.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from bench.perf.cli_start import EXAMPLES, ROOT, build_index, cli_row, command_env, index_command, shown, timed_runs
from bench.perf.config import Footage, PerfConfig, Progress
from bench.perf.sections.cli import CliResult
from bench.perf.serve_start import time_serve
from bench.perf.targets import CLI_BASELINE

DEMO_INDEX = ROOT / "out" / "demo-index"  # where `make demo` indexes the examples
INDEX = "{index}"  # in a command's arguments: the index folder it runs on
BOX, CAMPUS = str(EXAMPLES / "box.mp4"), str(EXAMPLES / "campus_01.mp4")
SEARCH_TEXT = "a hand holding a cup"


@dataclass(frozen=True)
class Command:
    key: str  # what the targets know its row by
    args: tuple[str, ...]  # after `convis`

    def on(self, index_dir: Path) -> list[str]:
        return [str(index_dir) if a == INDEX else a for a in self.args]


HELP = (Command("help", ("--help",)), Command("bench-help", ("bench", "--help")),
        Command("search-help", ("search", "--help")))
COMMANDS = HELP + (
    Command("models", ("models",)),
    Command(CLI_BASELINE, ("query", "--anchor", BOX, "--concept", "main-action", "--index-dir", INDEX)),
    Command("info", ("info", "--index-dir", INDEX)),
    Command("ls", ("ls", "--index-dir", INDEX)),
    Command("search", ("search", SEARCH_TEXT, "--index-dir", INDEX)),
    Command("search-concept", ("search", "--concept", "location", "the campus square", "--index-dir", INDEX)),
    Command("change", ("query", "--anchor", BOX, "--change", "a cup instead of a box", "--index-dir", INDEX)),
)
WINDOW = Command("window", ("query", "--anchor", BOX, "--start", "2", "--end", "4", "--concept", "main-action",
                            "--index-dir", INDEX))
# no weights: the default LMM is looked for in an empty Hugging Face cache, offline
DIFF = Command("diff-refusal", ("diff", BOX, CAMPUS, "--action", "moving an object", "-s", "the object is lifted"))


def time_commands(commands: tuple[Command, ...], index_dir: Path, runs: int, progress: Progress) -> list[CliResult]:
    rows = []
    for command in commands:
        progress(f"cli: {shown(command.on(index_dir))}, {runs} runs")
        rows.append(cli_row(shown(command.on(index_dir)), command.key, timed_runs(command.on(index_dir), runs)))
    return rows


def time_window(index_dir: Path, runs: int, scratch: Path) -> list[CliResult]:
    """The windowed anchor query on a fresh copy of the index (whatever a first run keeps there, it has not yet):
    its first run, and the median of ``runs`` after it."""
    fresh = scratch / "window-index"
    shutil.rmtree(fresh, ignore_errors=True)
    shutil.copytree(index_dir, fresh)
    done = timed_runs(WINDOW.on(fresh), runs + 1)
    label = shown(WINDOW.on(fresh))
    return [cli_row(f"{label} (first run)", "window-first", done[:1]),
            cli_row(f"{label} (again)", "window-again", done[1:])]


def time_refusal(runs: int, scratch: Path) -> CliResult:
    """`convis diff` where its LMM's weights are not: the seconds to its one-line refusal."""
    empty = scratch / "no-weights"
    empty.mkdir(exist_ok=True)
    env = command_env(HF_HUB_OFFLINE="1", HF_HOME=str(empty), HF_HUB_CACHE=str(empty / "hub"))
    return cli_row(shown(DIFF.args) + " (no weights: refused)", DIFF.key, timed_runs(DIFF.args, runs, env, True))


def time_reindex(index_dir: Path, runs: int) -> CliResult:
    """`convis index` again over the indexed clips: nothing changed, so nothing is decoded or embedded."""
    args = index_command(index_dir)
    return cli_row(shown(args) + " (nothing to do)", "reindex", timed_runs(args, runs))


def measure_cli(index_dir: Path, runs: int, scratch: Path, progress: Progress = lambda message: None
                ) -> list[CliResult]:
    """Every row of the section on the index in ``index_dir`` (the demo's), ``runs`` runs each."""
    rows = time_commands(COMMANDS, index_dir, runs, progress)
    progress(f"cli: windowed anchor query, first run and {runs} more")
    rows += time_window(index_dir, runs, scratch)
    progress(f"cli: convis diff without weights, {runs} runs")
    rows.append(time_refusal(runs, scratch))
    progress(f"cli: convis serve, {runs} servers")
    rows += time_serve(index_dir, runs, SEARCH_TEXT, scratch / "serve.log")
    progress(f"cli: a re-index with nothing to do, {runs} runs")
    rows.append(time_reindex(index_dir, runs))
    return rows


def run_cli(config: PerfConfig, footage: Footage, progress: Progress) -> list[CliResult]:
    """Smoke runs time the --help commands once (no index to build); other runs index the examples into the demo
    index first (built when absent, else brought up to date), then time each command ``max(5, --repeat)``
    times."""
    if config.smoke:
        progress("cli: the --help commands")
        return time_commands(HELP, DEMO_INDEX, 1, progress)
    progress(f"cli: indexing {EXAMPLES} into {DEMO_INDEX} (nothing to do when it is up to date)")
    build_index(DEMO_INDEX)
    return measure_cli(DEMO_INDEX, max(5, config.repeat), footage.scratch, progress)
