"""`convis bench perf --sections filter`: recall@10 of filtered searches against an exact search of the kept rows
(computed again here), each index kind and share, reported, read back and judged."""

import numpy as np

from bench.perf.config import PerfConfig
from bench.perf.filtered import KEEPS, run_filter
from bench.perf.markdown import markdown
from bench.perf.report import PerfReport, checks

MACHINE = {"date": "", "cpus": 2, "memory_gb": 1, "python": "", "torch": "", "torch_threads": 1, "faiss": "",
           "faiss_threads": 1, "blas_threshold": 20, "load_before": ""}


def test_every_index_kind_and_share_is_measured_and_finds_the_exact_filtered_top_10(tmp_path):
    config = PerfConfig.smoke_run(sections=("filter",), sizes=(1500,), single=6)
    rows = run_filter(config, None, lambda message: None)
    assert [(r.index, r.keep) for r in rows] == [(kind, keep) for kind in ("exact", "IVF", "HNSW") for keep in KEEPS]
    assert all(r.recall_at_10 == 1.0 and r.queries == 6 and r.vectors == 1500 for r in rows)
    assert all(np.isfinite(r.p50_ms) and r.unfiltered_p50_ms > 0 for r in rows)
    assert all(r.runs == 1 and r.first_ms > 0 and r.second_ms > 0 and r.cpu_p50_ms > 0 for r in rows)
    report = PerfReport(MACHINE, {}, filter=rows)
    assert PerfReport.from_dict(report.as_dict()).filter == rows
    judged = {target: met for target, _, met in checks(report)}
    assert judged["IVF index, filter keeping 1%: recall@10 against exact filtered = 1.000"]
    assert "HNSW index, filter keeping 10%: p50 <= 2x unfiltered" in judged
    assert "## Filtered search" in markdown(report)
