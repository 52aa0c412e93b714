"""Targets judged from a report's rows."""

from bench.perf.report import PerfReport, checks
from bench.perf.sections.indexing import IndexingResult


def _rows(decode_s, embed_s, pipeline_s, reference_s):
    row = IndexingResult
    return [row("decode", "sampled", "pyav", "-", 2, 16, decode_s),
            row("decode", "every frame", "pyav", "-", 2, 16, reference_s),
            row("embed", "sampled", "pyav", "m", 2, 16, embed_s, torch_threads=2, setting="default"),
            # as the engine runs it: fewer torch threads beside the decoder, same setting
            row("end-to-end", "sampled", "pyav", "m", 2, 16, pipeline_s, torch_threads=1, setting="default")]


def test_targets_are_judged_from_the_rows():
    report = PerfReport({}, {}, indexing=_rows(1.0, 2.0, 2.4, 12.0))
    found = {target: ok for target, _, ok in checks(report)}
    assert found["pyav, torch threads default: end-to-end >= 80% of min(decode, embed)"]  # 2.0 / 2.4 = 83%
    assert found["pyav: sampled decoding >= 10x faster than every frame (the paper's way)"]
    report.indexing = _rows(1.0, 2.0, 3.0, 5.0)
    assert not any(ok for _, _, ok in checks(report))
