"""Pair scoring speed of each LMM family: one anchor against the other clips under several concepts, at batch 1 and
the family's default batch, with prompt sharing on and off where the reranker has the switch.

``--shape tiny`` (the default, and ``--smoke``) runs the tiny random checkpoints on whatever device there is and
is for the counts; ``--shape 7b`` runs random checkpoints of the real models' dimensions on the GPU (real_shape).
"""

from __future__ import annotations

import inspect
from collections import Counter
from pathlib import Path
from typing import Sequence

import numpy as np

from bench.perf import gpu, real_shape
from bench.perf.config import Footage, PerfConfig, Progress
from bench.perf.sections.rerank_lmm import LmmRerankResult
from rerankers.factory import create_reranker
from retrieval.core.concepts import CONVIS_CONCEPTS
from retrieval.media.video_decoder import VideoDecoder

WORK_KEYS = ("vision_calls", "prefix_passes", "pair_passes")


def takes_share(model) -> bool:
    """Whether the family's reranker is built with a ``share`` switch (prompt-prefix sharing)."""
    return "share" in inspect.signature(type(model).__init__).parameters


def decoded(clips: Sequence[Path], model) -> list[np.ndarray]:
    """Each clip's frames as the family sees them, decoded once."""
    decoder = VideoDecoder()
    return [decoder.sample_span(clip, model.frame_spec, 0.0, None).pixels for clip in clips]


def fresh(frames: list[np.ndarray]) -> list[np.ndarray]:
    return [f.copy() for f in frames]


def work_done(model, before: Counter) -> dict:
    """The reranker's work counts since ``before`` (None each when it keeps none)."""
    now = getattr(model, "work", None)
    if now is None:
        return dict.fromkeys(WORK_KEYS)
    return {key: int(now.get(key, 0) - before.get(key, 0)) for key in WORK_KEYS}


def score_all(model, frames: list[np.ndarray], concepts: Sequence[str]) -> None:
    """The first clip against every other one, concept by concept, the anchor the same object in every pair (as
    the query path hands it)."""
    anchor = frames[0]
    pairs = [(anchor, other) for other in frames[1:]]
    for words in concepts:
        model.score_pairs(pairs, words, prepared=True)


def measure_family(family: str, folder: Path, clips: Sequence[Path], shape: str, concepts: Sequence[str],
                   batches: Sequence[int | None] = (1, None), profile: str = "all") -> list[LmmRerankResult]:
    """The family's rows: sharing on and off (where it has the switch), at ``batches`` (None: the family's own),
    the model loaded once. ``profile``: "all" rows get a profiled run for their kernel share, "first" only the
    first (sharing on, the first batch), "none" none."""
    model = create_reranker(str(folder))
    frames = decoded(clips, model)
    shares = (True, False) if takes_share(model) else (None,)
    sizes = list(dict.fromkeys(model.batch_size if b is None else b for b in batches))
    rows = []
    for share in shares:
        for batch in sizes:
            asked = model.asked_with(batch_size=batch, share=share)
            profiled = profile == "all" or (profile == "first" and not rows)
            rows.append(pair_row(family, asked, frames, shape, concepts, share, profiled))
    del model
    gpu.release()
    return rows


def pair_row(family: str, model, frames, shape: str, concepts, share, profile: bool = True) -> LmmRerankResult:
    # every run gets copies of the frames: a reranker that keeps vision outputs by the frames' identity must not
    # find one from an earlier run (a query's clips are new to it too)
    score_all(model, fresh(frames[:2]), concepts[:1])  # warm-up: kernels chosen, caches allocated
    before = Counter(getattr(model, "work", None) or {})
    timed_frames, profiled = fresh(frames), fresh(frames)
    seconds, peak = gpu.timed(lambda: score_all(model, timed_frames, concepts))
    work = work_done(model, before)
    share_of_kernels = gpu.kernel_share(lambda: score_all(model, profiled, concepts)) if profile else None
    return LmmRerankResult(family, shape, str(getattr(model, "device", "cpu")), model.batch_size,
                           "-" if share is None else ("on" if share else "off"), (len(frames) - 1) * len(concepts),
                           len(concepts), seconds, **work, gpu_peak_gb=peak, kernel_share=share_of_kernels)


def run_lmm_rerank(config: PerfConfig, footage: Footage, progress: Progress) -> list[LmmRerankResult]:
    """Every family, the first clip against the next eight (two in smoke runs: one would share nothing; with two
    clips in all, the second is asked twice, decoded apart), the five ConViS concepts (two)."""
    clips = footage.clips[:9]
    if config.smoke:
        clips = [clips[0], *(clips[1:] * 2)[:2]]
    concepts = list(CONVIS_CONCEPTS.values())[: 2 if config.smoke else None]
    what = f"rerank, {len(clips) - 1} candidates x {len(concepts)} concepts"
    return [row for family, folder in real_shape.each_checkpoint(config.shape, footage.scratch, progress, what)
            for row in measure_family(family, folder, clips, config.shape, concepts)]
