"""The rows a measurement returns: one per indexing stage, vector index setting, or reranking run."""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class IndexingResult:
    stage: str  # "decode", "embed", "end-to-end"
    way: str  # "sampled" (ours) or "every frame" (the reference feature extraction)
    decoder: str
    indexer: str
    clips: int
    frames: int  # frames handed to the model
    seconds: float
    detail: str = ""
    peak_rss_mb: float = 0.0
    cpu_s: float = 0.0  # CPU time of the timed block, workers included
    torch_threads: int = 0  # torch's intra-op threads in the measuring process
    setting: str = ""  # the --torch-threads entry it was measured under ("default": as convis runs)

    @property
    def frames_per_s(self) -> float:
        return self.frames / self.seconds if self.seconds > 0 else math.inf

    @property
    def clips_per_min(self) -> float:
        return 60 * self.clips / self.seconds if self.seconds > 0 else math.inf


@dataclass(frozen=True)
class RecallResult:
    vectors: int
    dim: int
    index: str  # what kind, e.g. "exact", "IVF (auto)"
    factory: str
    params: str  # search-time parameters
    batch: int
    queries: int
    threads: int
    p50_ms: float
    p95_ms: float
    recall_at_100: float
    build_s: float
    peak_rss_mb: float = 0.0


@dataclass(frozen=True)
class FilterResult:
    """A filter's search on one index kind: recall@10 against an exact search of the rows it keeps, and its
    median latency beside the same index's unfiltered one."""

    vectors: int
    dim: int
    index: str  # "exact", "IVF", "HNSW"
    factory: str
    params: str
    keep: float  # the share of the units the filter keeps
    queries: int
    recall_at_10: float
    p50_ms: float
    unfiltered_p50_ms: float
    build_s: float
    first_ms: float = 0.0  # a filter's first query (its kept rows searched in place)
    second_ms: float = 0.0  # its second (the kept rows gathered in half precision for the next ones)
    runs: int = 1  # latencies are the median over this many runs
    cpu_p50_ms: float = 0.0  # the searching thread's CPU time: what the wall clock counts less waiting for a core
    unfiltered_cpu_p50_ms: float = 0.0

    @property
    def ratio(self) -> float:
        return self.p50_ms / self.unfiltered_p50_ms if self.unfiltered_p50_ms > 0 else float("inf")

    @property
    def cpu_ratio(self) -> float:
        return self.cpu_p50_ms / self.unfiltered_cpu_p50_ms if self.unfiltered_cpu_p50_ms > 0 else float("inf")


@dataclass(frozen=True)
class CliResult:
    command: str  # what was run, e.g. "convis --help"
    runs: int  # fresh processes timed
    median_s: float  # wall seconds, start to exit
    min_s: float
    max_s: float
    cpu_s: float  # median CPU seconds (user + system)
    peak_rss_mb: float  # the largest max RSS of the runs
    median_rss_mb: float = 0.0  # the median max RSS of the runs
    key: str = ""  # what the targets know the row by, e.g. "query" for the baseline (cli_session.py)


@dataclass(frozen=True)
class RerankResult:
    reranker: str
    pairs: int
    first_s: float  # cold: decode each clip, run the model on every pair, store the scores
    decodes: int  # clips decoded during the cold run (each clip once)
    repeat_s: float  # a new command asking the same: score cache only
    repeat_model_pairs: int
    repeat_decodes: int
    load_s: float  # building the reranker (weights), paid by every command that reranks
    peak_rss_mb: float = 0.0

    @property
    def per_pair_s(self) -> float:
        return self.first_s / max(1, self.pairs)

    @property
    def speedup(self) -> float:
        return self.first_s / self.repeat_s if self.repeat_s > 0 else math.inf


@dataclass(frozen=True)
class ScalingResult:
    video: str
    workers: int  # decode worker processes sharing the one file
    segment_s: float
    units: int
    windows: int  # decode tasks the file was cut into
    frames: int  # sampled frames decoded
    seconds: float  # wall, file handed over to last window back
    worker_peak_mb: float  # the highest peak RSS (VmHWM) of any one worker
    speedup: float = 0.0  # one worker's seconds over these
    peak_rss_mb: float = 0.0  # the measuring process itself


@dataclass(frozen=True)
class ServeLoadResult:
    route: str  # e.g. "/query"
    phase: str  # "alone" (one request at a time) or "load" (the client threads at once, index runs writing)
    requests: int
    p50_ms: float
    p99_ms: float
    max_ms: float
    errors: int  # answers other than 200 and 503, and requests that got no answer
    busy: int  # 503 answers: the server at capacity (or the index busy), with Retry-After
    in_flight: float = 0.0  # under load: the route's requests outstanding on average
    cores: int = 0  # the cores the measuring process could run on
    detail: str = ""


@dataclass(frozen=True)
class LmmRerankResult:
    """One family's pair scoring at one batch size, sharing on or off: one anchor against N clips, C concepts."""

    family: str
    shape: str  # "tiny" (random tiny checkpoint) or "7b" (the real model's dimensions, random weights)
    device: str
    batch: int  # pairs a forward pass
    share: str  # "on", "off", or "-" where the reranker has no switch
    pairs: int  # pairs scored (candidates x concepts)
    concepts: int
    seconds: float
    vision_calls: int | None = None  # the reranker's work counts over the timed run (None: it keeps none)
    prefix_passes: int | None = None
    pair_passes: int | None = None
    gpu_peak_gb: float | None = None  # torch.cuda.max_memory_allocated over the timed run (None: no GPU)
    kernel_share: float | None = None  # GPU kernel time over wall time of a profiled run (None: no GPU)
    peak_rss_mb: float = 0.0

    @property
    def pairs_per_s(self) -> float:
        return self.pairs / self.seconds if self.seconds > 0 else math.inf


@dataclass(frozen=True)
class DescribeResult:
    """One family describing units one way: each request a generation, or every question of the batch in one."""

    family: str
    shape: str
    device: str
    way: str  # "one request a call" or "every question at once"
    batch: int  # units a generation
    units: int
    answers: int
    tokens: int  # new tokens generated (padding after a row's end not counted)
    generate_calls: int
    seconds: float
    gpu_peak_gb: float | None = None
    kernel_share: float | None = None
    peak_rss_mb: float = 0.0

    @property
    def answers_per_s(self) -> float:
        return self.answers / self.seconds if self.seconds > 0 else math.inf

    @property
    def tokens_per_s(self) -> float:
        return self.tokens / self.seconds if self.seconds > 0 else math.inf


@dataclass(frozen=True)
class DupesBenchResult:
    """``dupes`` on synthetic units: the range search and the whole grouping, with the planted copies found."""

    units: int
    dim: int
    factory: str
    threshold: float
    unit_pairs: int
    groups: int
    recall: float  # of the planted copy file pairs
    precision: float
    search_s: float
    total_s: float


@dataclass(frozen=True)
class SpeechResult:
    """The speech indexer on one generated sound track: voice detection alone, then with Whisper on the voiced
    spans; seconds of sound each gets through a second."""

    model: str
    device: str
    track: str  # what the track holds: "speech, silence and tones", "silence"
    audio_s: float
    voiced_s: float
    spans: int
    calls: int  # voiced spans handed to Whisper
    lines: int
    vad_s: float  # wall seconds of voice detection
    total_s: float  # wall seconds of detection and recognition

    @property
    def vad_audio_per_s(self) -> float:
        return self.audio_s / self.vad_s if self.vad_s > 0 else math.inf

    @property
    def audio_per_s(self) -> float:
        return self.audio_s / self.total_s if self.total_s > 0 else math.inf
