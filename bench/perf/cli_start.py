"""Timing `convis` commands as fresh processes: each run's wall seconds, CPU seconds and max RSS, summed up as
one row (the median wall and RSS, and the largest RSS).

A child's max RSS counts from its parent's at fork and at exec (Linux keeps the larger), and the measuring process
may hold torch (~600 MB): so a small Python of its own starts each command and reads its usage with wait4.
"""

from __future__ import annotations

import json
import os
import shlex
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Mapping, Sequence

from bench.perf.sections.cli import CliResult

ROOT = Path(__file__).resolve().parents[2]
CLI = ROOT / "cli.py"  # `python cli.py ...` is `convis ...`
EXAMPLES = ROOT / "examples" / "videos"
EXAMPLE_CAPTIONS = ROOT / "examples" / "captions"
INDEX_TIMEOUT_S = 1800.0
COMMAND_TIMEOUT_S = 120.0

_TIMER = """
import json, os, sys, time
argv, runs = json.loads(sys.argv[1])
out = []
for _ in range(runs):
    started = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1)
        os.execv(argv[0], argv)
    _, status, usage = os.wait4(pid, 0)
    out.append([time.perf_counter() - started, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024,
                os.waitstatus_to_exitcode(status)])
print(json.dumps(out))
"""

Run = Sequence[float]  # one run: wall seconds, CPU seconds, max RSS MB


def command_env(**more: str) -> dict[str, str]:
    """The environment the timed commands run in: offline unless the caller's says otherwise (a hub lookup would
    only add a network round trip to what is measured), with ``more`` set."""
    return {**os.environ, "HF_HUB_OFFLINE": os.environ.get("HF_HUB_OFFLINE", "1"), **more}


def timed_runs(args: Sequence[str], runs: int, env: Mapping[str, str] | None = None,
               refused: bool = False) -> list[Run]:
    """``convis ARGS`` as ``runs`` fresh processes, each one's (wall s, CPU s, max RSS MB).  Each must exit 0, or,
    with ``refused``, exit with an error (a refusal is what is timed); RuntimeError otherwise."""
    argv = [sys.executable, str(CLI), *args]
    done = subprocess.run([sys.executable, "-c", _TIMER, json.dumps([argv, max(1, runs)])], capture_output=True,
                          text=True, timeout=COMMAND_TIMEOUT_S * max(1, runs), cwd=ROOT,
                          env=dict(env) if env is not None else command_env())
    said = (done.stderr.strip().splitlines() or [""])[-1]
    if done.returncode != 0 or not done.stdout.strip():
        raise RuntimeError(f"timing {' '.join(args)} failed: {said}")
    rows = json.loads(done.stdout)
    wrong = [code for *_, code in rows if (code != 0) != refused]
    if wrong:
        raise RuntimeError(f"convis {' '.join(args)} exited {wrong[0]}" + (" instead of refusing" if refused else "")
                           + f": {said}")
    return [row[:3] for row in rows]


def cli_row(command: str, key: str, runs: Sequence[Run]) -> CliResult:
    """One table row from the runs of a command: median, fastest and slowest wall, median CPU, median and largest
    max RSS."""
    walls, cpus, peaks = ([run[i] for run in runs] for i in range(3))
    return CliResult(command, len(walls), round(statistics.median(walls), 4), round(min(walls), 4),
                     round(max(walls), 4), round(statistics.median(cpus), 4), round(max(peaks), 1),
                     round(statistics.median(peaks), 1), key)


def time_command(args: Sequence[str], runs: int, label: str | None = None, key: str = "",
                 env: Mapping[str, str] | None = None, refused: bool = False) -> CliResult:
    """``convis ARGS`` timed as ``runs`` fresh processes (see ``timed_runs``), as one row."""
    return cli_row(label or shown(args), key, timed_runs(args, runs, env, refused))


def shown(args: Sequence[str]) -> str:
    """The command as the table names it: files by their names, without its --index-dir."""
    kept = [a for i, a in enumerate(args) if a != "--index-dir" and (i == 0 or args[i - 1] != "--index-dir")]
    return "convis " + shlex.join(Path(a).name if os.path.isabs(a) else a for a in kept)


def index_command(index_dir: Path, clips: Path = EXAMPLES) -> list[str]:
    """`convis index` of the clips into ``index_dir``, as the demo indexes them (with the example captions when the
    clips are the examples; the index's own indexers when it has some, else the default one)."""
    args = ["index", str(clips), "--index-dir", str(index_dir)]
    if clips.resolve() == EXAMPLES.resolve() and EXAMPLE_CAPTIONS.is_dir():
        args += ["--captions", str(EXAMPLE_CAPTIONS)]  # the demo index: a visual indexer and the text indexer
    return args


def build_index(index_dir: Path, clips: Path = EXAMPLES, indexer: str | None = None) -> None:
    """``convis index`` of the clips, once: builds the index when it is absent, else brings it up to date."""
    argv = [sys.executable, str(CLI), *index_command(index_dir, clips)] + (["--indexer", indexer] if indexer else [])
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=INDEX_TIMEOUT_S)
    if done.returncode != 0:
        raise RuntimeError(f"indexing {clips} for the CLI timings failed: "
                           f"{(done.stderr.strip().splitlines() or [''])[-1]}")
