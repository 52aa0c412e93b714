"""`convis bench perf --sections cli`: each command timed as fresh processes, reported and judged.

No timing is asserted (the machine is shared); only that the rows are made, read back and checked.
"""

import pytest

from bench.perf.cli_session import CLI_BASELINE, COMMANDS, SEARCH_TEXT, time_commands
from bench.perf.cli_start import shown, time_command, timed_runs
from bench.perf.markdown import markdown
from bench.perf.report import PerfReport, checks
from bench.perf.sections.cli import CliResult
from bench.perf.serve_start import time_serve

MACHINE = {"date": "", "cpus": 1, "memory_gb": 1, "python": "", "torch": "", "torch_threads": 1, "faiss": "",
           "faiss_threads": 1, "blas_threshold": 20, "load_before": ""}


def row(key: str, seconds: float, mb: float = 100.0) -> CliResult:
    return CliResult(key, 5, seconds, seconds, seconds, seconds, mb, mb, key)


def test_cli_rows_time_fresh_processes(demo_index):
    chosen = tuple(c for c in COMMANDS if c.key in (CLI_BASELINE, "search-help"))
    rows = time_commands(chosen, demo_index, runs=2, progress=lambda message: None)
    assert [r.key for r in rows] == ["search-help", CLI_BASELINE]
    assert rows[1].command == "convis query --anchor box.mp4 --concept main-action"
    assert all(r.runs == 2 and 0 < r.min_s <= r.median_s <= r.max_s for r in rows)
    assert all(0 < r.median_rss_mb <= r.peak_rss_mb < 400 for r in rows)  # each process's own peak: no model
    report = PerfReport(MACHINE, {}, cli=rows)
    assert PerfReport.from_dict(report.as_dict()).cli == rows
    assert [target for target, _, _ in checks(report)] == [
        "`convis search --help`: median <= 0.5 s",
        "`convis query --anchor box.mp4 --concept main-action`: median <= 0.5 s, max RSS < 250 MB"]
    page = markdown(report)
    assert "## Command-line start-up" in page and "| 1.00x |" in page  # the baseline against itself


def test_targets_are_judged_against_the_indexed_anchor_query():
    rows = [row(CLI_BASELINE, 1.0), row("search", 1.4), row("change", 1.6), row("search-concept", 1.0, mb=350),
            row("window-first", 9.0), row("window-again", 1.2), row("help", 0.2), row("serve-listening", 2.5)]
    found = {target.split("`")[1]: (measured, met) for target, measured, met in checks(PerfReport({}, {}, cli=rows))}
    assert {key: met for key, (_, met) in found.items()} == {
        CLI_BASELINE: False, "search": True, "change": False, "search-concept": False, "window-again": True,
        "help": True, "serve-listening": False}  # a first window has no target
    assert found["change"][0] == "median 1.600 s of 5 (1.600-1.600) = 1.60x, max RSS 100 MB"
    alone = checks(PerfReport({}, {}, cli=[row("window-again", 1.2), row("search", 1.2)]))
    assert [target for target, _, _ in alone] == ["`search`: max RSS < 300 MB"]  # no baseline, no ratio


def test_a_failing_command_is_an_error():
    with pytest.raises(RuntimeError, match="exited 2"):
        time_command(["ls", "--index-dir", "/nonexistent"], runs=1)


def test_a_refusal_is_timed_and_must_refuse():
    (run,) = timed_runs(["ls", "--index-dir", "/nonexistent"], 1, refused=True)
    assert run[0] > 0 and run[2] > 0
    with pytest.raises(RuntimeError, match="instead of refusing"):
        timed_runs(["--help"], 1, refused=True)


def test_commands_are_shown_as_typed_without_the_index_folder():
    assert shown(["query", "--anchor", "/clips/box.mp4", "--index-dir", "/x/out/demo-index", "-k", "5"]) == \
        "convis query --anchor box.mp4 -k 5"
    assert shown(["search", "a cup"]) == "convis search 'a cup'"


@pytest.mark.slow
def test_serve_is_timed_until_it_answers_and_then_warm(demo_index, tmp_path):
    listening, search = time_serve(demo_index, 1, SEARCH_TEXT, tmp_path / "serve.log")
    assert (listening.key, search.key) == ("serve-listening", "serve-search")
    assert listening.median_s > 0 and search.median_s > 0
    assert search.peak_rss_mb > listening.peak_rss_mb  # the models were built in between
