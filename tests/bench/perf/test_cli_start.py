"""`convis bench perf --sections cli`: each command timed as fresh processes, reported and judged.

No timing is asserted (the machine is shared); only that the rows are made, read back and checked.
"""

from bench.perf.cli_start import measure_cli, time_command
from bench.perf.markdown import markdown
from bench.perf.report import PerfReport, checks
from tests.paths import ROOT


def test_cli_rows_time_fresh_processes(demo_index):
    rows = measure_cli(demo_index, ROOT / "examples" / "videos" / "campus_01.mp4", runs=2)
    assert [r.command.split()[1] for r in rows] == ["--help", "query", "info", "ls"]
    assert all(r.runs == 2 and 0 < r.min_s <= r.median_s <= r.max_s and r.peak_rss_mb > 0 for r in rows)
    assert all(r.peak_rss_mb < 400 for r in rows)  # each process's own peak: none loads a model
    report = PerfReport({}, {}, cli=rows)
    assert PerfReport.from_dict(report.as_dict()).cli == rows
    assert [target for target, _, _ in checks(report)][0] == "`convis --help` median <= 0.3 s"
    assert "## Command-line start-up" in markdown(PerfReport({"date": "", "cpus": 1, "memory_gb": 1, "python": "",
                                                              "torch": "", "torch_threads": 1, "faiss": "",
                                                              "faiss_threads": 1, "blas_threshold": 20,
                                                              "load_before": ""}, {}, cli=rows))


def test_a_failing_command_is_an_error():
    try:
        time_command(["ls", "--index-dir", "/nonexistent"], runs=1)
    except RuntimeError as exc:
        assert "exited 2" in str(exc)
    else:
        raise AssertionError("a failing command must not be reported as timed")
