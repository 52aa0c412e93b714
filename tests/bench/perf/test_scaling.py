"""`convis bench perf --sections scaling`: one long file decoded by 1..N workers, every row and its checks.

No timing is asserted (the machine is shared); only that each worker count is measured on the same units and
frames, the speed-up is against one worker, and the report renders and reads back.
"""

import os

from bench.perf.config import Footage, PerfConfig
from bench.perf.markdown import markdown
from bench.perf.report import PerfReport, checks
from bench.perf.scaling import run_scaling


def test_each_worker_count_decodes_the_same_units_and_the_report_judges_the_targets(tmp_path):
    config = PerfConfig.smoke_run(sections=("scaling",), segment=10.0)
    rows = run_scaling(config, Footage(tmp_path, tmp_path, []), lambda message: None)
    assert [r.workers for r in rows] == list(range(1, (os.cpu_count() or 1) + 1))
    assert len({(r.units, r.frames) for r in rows}) == 1 and rows[0].units == 13  # 130 s in 10 s units
    assert rows[0].speedup == 1.0 and all(r.seconds > 0 and r.worker_peak_mb > 0 for r in rows)
    if len(rows) > 1:
        assert rows[1].windows > rows[0].windows  # two workers share the file: it is cut finer
        assert rows[1].speedup == round(rows[0].seconds / rows[1].seconds, 3)
    report = PerfReport({"date": "today", "cpus": 2, "memory_gb": 1, "python": "3", "torch": "t",
                         "torch_threads": 1, "faiss": "f", "faiss_threads": 1, "blas_threshold": 1,
                         "load_before": 0}, {}, scaling=rows)
    targets = {target for target, _, _ in checks(report)}
    assert any("every decode worker peaks below" in t for t in targets)
    assert ("2 decode workers" in " ".join(targets)) == (len(rows) > 1)
    assert "## One long file on every core" in markdown(report)
    assert PerfReport.from_dict(report.as_dict()).scaling == rows
