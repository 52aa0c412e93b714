"""Performance measurements: indexing throughput, recall latency and quality, reranking cost, peak memory.

Each part of a run is a section (bench/perf/sections/: its runner, its rows, their JSON and markdown), and the
run, the report and the page loop over their registry.  Outside smoke runs every measurement
runs in a fresh process, so one measurement's memory peak never inflates the next one's;
peak RSS is sampled over that process and its children (decoder workers included).  Importing
this package loads nothing: each name below is imported at first use (a GPU run of the LMM sections needs
neither the catalog nor FAISS), and a measurement imports torch when it runs.
"""

from importlib import import_module

# bench.perf.run.run and bench.perf.markdown.markdown are imported from their modules: a name here that is also
# a submodule's would be shadowed by the submodule once it is imported

_WHERE = {
    "DEFAULT_SIZES": "bench.perf.config",
    "Footage": "bench.perf.config",
    "PerfConfig": "bench.perf.config",
    "Progress": "bench.perf.config",
    "every_frame": "bench.perf.decode",
    "measure_decode": "bench.perf.decode",
    "streamed_frames": "bench.perf.decode",
    "clip_job": "bench.perf.decoders",
    "only_decoder": "bench.perf.decoders",
    "make_clips": "bench.perf.footage",
    "write_test_video": "bench.perf.footage",
    "machine_info": "bench.perf.measuring",
    "measure": "bench.perf.measuring",
    "PeakRss": "bench.perf.memory",
    "PerfReport": "bench.perf.report",
    "checks": "bench.perf.report",
    "combine": "bench.perf.report",
    "CliResult": "bench.perf.sections.cli",
    "IndexingResult": "bench.perf.sections.indexing",
    "RecallResult": "bench.perf.sections.recall",
    "RerankResult": "bench.perf.sections.rerank",
    "Section": "bench.perf.section",
    "SECTIONS": "bench.perf.sections",
    "section_names": "bench.perf.sections",
    "mixture": "bench.perf.search",
}

__all__ = [
    "DEFAULT_SIZES", "SECTIONS", "CliResult", "Footage", "IndexingResult", "PeakRss", "PerfConfig", "PerfReport",
    "Progress", "RecallResult", "RerankResult", "Section", "checks", "clip_job", "combine", "every_frame",
    "machine_info", "make_clips", "measure", "measure_decode", "mixture", "only_decoder",
    "section_names", "streamed_frames", "write_test_video",
]


def __getattr__(name: str):
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(_WHERE[name]), name)
    globals()[name] = value
    return value
