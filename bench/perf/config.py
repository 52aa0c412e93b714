"""What a `convis bench perf` run is asked to measure, and what every measured part is handed."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

DEFAULT_SIZES = (10_000, 100_000, 1_000_000)

Progress = Callable[[str], None]


@dataclass
class PerfConfig:
    videos: Path | None = None  # None: examples/videos (or generated clips in smoke runs)
    indexer: str = "efficientnet-lite0"
    decoders: tuple[str, ...] = ("decord", "pyav")
    sizes: tuple[int, ...] = DEFAULT_SIZES
    dim: int = 768
    queries: int = 500  # held-out queries: 200 timed one by one, 5 batches of 100
    single: int = 200
    batches: int = 5
    repeat: int = 3  # indexing and reranking measurements: the median of this many runs
    copies: int = 1  # each clip indexed this many times (hard links), so fixed start-up costs amortise
    # indexing is measured once per entry; None is torch's default (one per core), as convis runs today
    torch_threads: tuple[int | None, ...] = (None,)
    reranker: str | None = None  # None: the tiny random Qwen2-VL
    long_video: Path | None = None
    segment: float | None = None  # for the long video
    sections: tuple[str, ...] = ("indexing", "recall", "rerank", "cli")
    serve_threads: int = 20  # the serve section's clients asking at once
    serve_requests: int = 25  # requests each of them asks
    isolate: bool = True
    smoke: bool = False
    shape: str = "tiny"  # the LMM sections' checkpoints: "tiny" (random tiny), "7b" (the real dimensions, on a GPU)

    @classmethod
    def smoke_run(cls, **overrides) -> "PerfConfig":
        """Seconds, not minutes: generated clips, a few thousand small vectors, one run each."""
        base = dict(sizes=(2000,), dim=32, queries=40, single=20, batches=2, repeat=1, isolate=False, smoke=True,
                    torch_threads=(1,))
        return cls(**{**base, **{k: v for k, v in overrides.items() if v is not None}})


@dataclass(frozen=True)
class Footage:
    """The clips a run measures and the scratch folder it may write in (removed after the run)."""

    scratch: Path
    source: Path  # the folder of clips
    clips: list[Path]  # each clip once; indexing with --copies makes its own hard links
