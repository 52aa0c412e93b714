"""Peak memory of a measurement. No timing is asserted (the machine is shared)."""

import numpy as np

from bench.perf.decode import measure_decode
from bench.perf.measuring import measure
from bench.perf.memory import PeakRss


def test_peak_rss_sees_an_allocation_and_measure_fills_it_in():
    with PeakRss() as peak:
        block = np.ones(64 * 2**20 // 8)  # 64 MB touched
        del block
    assert peak.mb > 60
    row = measure(measure_decode, [], "pyav", 4, isolate=False)
    assert row.peak_rss_mb > 0 and row.frames == 0
