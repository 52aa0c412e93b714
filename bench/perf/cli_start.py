"""The command line's start-up: `convis --help`, and `query` (an indexed anchor), `info` and `ls` on an index
of the clips, each timed as a fresh process several times: median wall seconds and the largest max RSS.

A query whose anchor is indexed reads the catalog, hashes the file and searches FAISS; what it costs beyond
that is what the command imports, so these rows show whether the light path stays light (no torch).
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Sequence

from bench.perf.config import Footage, PerfConfig, Progress
from bench.perf.results import CliResult

ROOT = Path(__file__).resolve().parents[2]
CLI = ROOT / "cli.py"  # `python cli.py ...` is `convis ...`
EXAMPLE_CAPTIONS = ROOT / "examples" / "captions"
INDEX_TIMEOUT_S = 1800.0
COMMAND_TIMEOUT_S = 120.0


# Runs in a small Python of its own, which starts each command: a child's max RSS counts from its parent's
# at fork and at exec (Linux keeps the larger), and this process may hold torch (~600 MB).
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


def time_command(args: Sequence[str], runs: int, label: str | None = None) -> CliResult:
    """``convis ARGS`` as ``runs`` fresh processes: the median, fastest and slowest wall seconds, the median
    CPU seconds, and the largest max RSS (each process's own, from wait4; KiB on Linux)."""
    argv = [sys.executable, str(CLI), *args]
    done = subprocess.run([sys.executable, "-c", _TIMER, json.dumps([argv, max(1, runs)])], capture_output=True,
                          text=True, timeout=COMMAND_TIMEOUT_S * max(1, runs))
    if done.returncode != 0 or not done.stdout.strip():
        raise RuntimeError(f"timing {' '.join(args)} failed: {(done.stderr.strip().splitlines() or [''])[-1]}")
    rows = json.loads(done.stdout)
    failed = [code for *_, code in rows if code != 0]
    if failed:
        said = (done.stderr.strip().splitlines() or [""])[-1]
        raise RuntimeError(f"convis {' '.join(args)} exited {failed[0]}: {said}")
    walls, cpus, peaks = ([row[i] for row in rows] for i in range(3))
    return CliResult(label or "convis " + " ".join(args), len(walls), round(statistics.median(walls), 4),
                     round(min(walls), 4), round(max(walls), 4), round(statistics.median(cpus), 4),
                     round(max(peaks), 1))


def build_index(clips_folder: Path, index_dir: Path, indexer: str | None = None) -> None:
    """``convis index`` of the clips (with the example captions when they are the examples), once."""
    argv = [sys.executable, str(CLI), "index", str(clips_folder), "--index-dir", str(index_dir)]
    if indexer:
        argv += ["--indexer", indexer]
    if clips_folder.resolve() == (ROOT / "examples" / "videos").resolve() and EXAMPLE_CAPTIONS.is_dir():
        argv += ["--captions", str(EXAMPLE_CAPTIONS)]  # the demo index: a visual indexer and the text indexer
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=INDEX_TIMEOUT_S)
    if done.returncode != 0:
        raise RuntimeError(f"indexing {clips_folder} for the CLI timings failed: "
                           f"{(done.stderr.strip().splitlines() or [''])[-1]}")


def measure_cli(index_dir: Path | None, anchor: Path | None, runs: int) -> list[CliResult]:
    """`convis --help` and, given an index, `query` for ``anchor`` (indexed), `info` and `ls`."""
    rows = [time_command(["--help"], runs)]
    if index_dir is None:
        return rows
    where = ["--index-dir", str(index_dir)]
    rows.append(time_command(["query", "--anchor", str(anchor), "--concept", "location", *where], runs,
                             "convis query --anchor CLIP --concept location (indexed anchor)"))
    rows.append(time_command(["info", *where], runs, "convis info"))
    rows.append(time_command(["ls", *where], runs, "convis ls"))
    return rows


def run_cli(config: PerfConfig, footage: Footage, progress: Progress) -> list[CliResult]:
    """Smoke runs time `convis --help` once (no index to build); other runs index the clips first, then time
    each command ``max(5, --repeat)`` times."""
    if config.smoke:
        progress("cli: convis --help")
        return measure_cli(None, None, 1)
    index_dir = footage.scratch / "cli-index"
    progress(f"cli: indexing {footage.source} for the query timings")
    build_index(footage.source, index_dir, config.indexer)
    runs = max(5, config.repeat)
    progress(f"cli: convis --help, query, info, ls, {runs} runs each")
    return measure_cli(index_dir, footage.clips[0], runs)
