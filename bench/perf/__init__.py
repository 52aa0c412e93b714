"""Performance measurements: indexing throughput, recall latency and quality, reranking cost, peak memory.

Each measurement is a function returning a dataclass row.  Outside smoke runs every measurement
runs in a fresh process, so one measurement's memory peak never inflates the next one's;
peak RSS is sampled over that process and its children (decoder workers included).  Importing
this package loads no torch: a measurement imports it when it runs.
"""

from bench.perf.config import DEFAULT_SIZES, Footage, PerfConfig, Progress
from bench.perf.decode import every_frame, measure_decode, streamed_frames
from bench.perf.decoders import clip_job, only_decoder
from bench.perf.footage import make_clips, write_test_video
from bench.perf.markdown import markdown
from bench.perf.measuring import machine_info, measure
from bench.perf.memory import PeakRss
from bench.perf.report import PerfReport, checks, combine
from bench.perf.results import CliResult, IndexingResult, RecallResult, RerankResult
from bench.perf.run import SECTIONS, Section, run, section_names
from bench.perf.search import mixture

__all__ = [
    "DEFAULT_SIZES", "SECTIONS", "CliResult", "Footage", "IndexingResult", "PeakRss", "PerfConfig", "PerfReport",
    "Progress", "RecallResult", "RerankResult", "Section", "checks", "clip_job", "combine", "every_frame",
    "machine_info", "make_clips", "markdown", "measure", "measure_decode", "mixture", "only_decoder", "run",
    "section_names", "streamed_frames", "write_test_video",
]
