"""Reranking, each LMM family: pairs/s at batch 1 and its default batch (measured with the rerank section)."""

from __future__ import annotations

from dataclasses import dataclass

from bench.perf.section import Section, maybe, one_table, ratio, rounded


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
        return ratio(self.pairs, self.seconds)


HEAD = ["family", "shape", "device", "batch", "sharing", "pairs", "concepts", "seconds", "pairs/s", "vision calls",
        "prefix passes", "pair passes", "GPU peak GB", "GPU busy in kernels"]


def _row(r: LmmRerankResult) -> list:
    return [r.family, r.shape, r.device, r.batch, r.share, r.pairs, r.concepts, f"{r.seconds:.2f}",
            f"{r.pairs_per_s:.2f}", maybe(r.vision_calls), maybe(r.prefix_passes), maybe(r.pair_passes),
            maybe(r.gpu_peak_gb, "{:.1f}"), maybe(r.kernel_share, "{:.0%}")]


SECTION = Section(
    "rerank_lmm", "each LMM family's pairs/s at batch 1 and its default batch, prompt sharing on and off, its work "
                  "counts, GPU memory and kernel share (--shape)",
    LmmRerankResult, "bench.perf.lmm_rerank:run_lmm_rerank", one_table("Reranking, each LMM family", HEAD, _row),
    derived=rounded(pairs_per_s=3), chosen_by=lambda config: "rerank" in config.sections)
