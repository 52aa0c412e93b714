"""`convis bench perf --sections dupes`: the planted copies found at the usual threshold, and at the lowest
threshold every unit paired with its nearest few only, its peak memory measured and judged."""

from dataclasses import replace

from bench.perf.config import PerfConfig
from bench.perf.dupes import LOWEST, run_dupes
from bench.perf.markdown import markdown
from bench.perf.report import PerfReport, checks
from bench.perf.targets import DUPES_LOWEST_MB
from retrieval.analysis.dupe_groups import NEIGHBOURS

MACHINE = {"date": "", "cpus": 2, "memory_gb": 1, "python": "", "torch": "", "torch_threads": 1, "faiss": "",
           "faiss_threads": 1, "blas_threshold": 20, "load_before": ""}


def test_the_lowest_threshold_pairs_a_bounded_number_and_its_memory_is_judged():
    config = PerfConfig.smoke_run(sections=("dupes",), sizes=(1000,))
    usual, lowest = run_dupes(config, None, lambda message: None)
    assert usual.recall == 1.0 and usual.saturated == 0 and usual.threshold == 0.9
    assert lowest.threshold == LOWEST and lowest.units == 1000
    assert lowest.saturated == 1000 and lowest.unit_pairs <= 1000 * NEIGHBOURS  # not the ~250,000 in range
    assert lowest.peak_rss_mb > 0
    report = PerfReport(MACHINE, {}, dupes=[usual, lowest])
    assert PerfReport.from_dict(report.as_dict()).dupes == [usual, lowest]
    assert "units saturated" in markdown(report)
    at_scale = replace(lowest, units=30_000, peak_rss_mb=DUPES_LOWEST_MB + 1)
    judged = checks(PerfReport(MACHINE, {}, dupes=[at_scale]))
    assert [met for target, _, met in judged if "lowest threshold" in target] == [False]
