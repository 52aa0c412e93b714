"""Each LMM family in one line: pairs/s, caption tokens/s, GPU busy share, MFU, GPU memory, versions."""

from __future__ import annotations

from dataclasses import dataclass

from bench.perf.gpu import UNKNOWN_CARD
from bench.perf.section import Section, maybe, one_table, ratio, rounded


@dataclass(frozen=True)
class LmmResult:
    """One family, its model loaded once: pair scoring (the family's batch, its default sharing), every question of
    its units at once, and units described from their files as decoded before the feed and with it."""

    family: str
    shape: str
    device: str
    card: str | None  # the CUDA card's name (None: no GPU)
    batch: int
    pairs: int
    pair_seconds: float
    tokens: int  # caption tokens written
    caption_seconds: float
    pair_flops: int  # the model's own operations over the timed pairs (torch.utils.flop_counter)
    mfu: float | None  # pair_flops a second over the card's bf16 peak (None: no GPU or an unknown card)
    pair_busy: float | None  # GPU kernel time over wall time (None: no GPU)
    caption_busy: float | None
    unfed_seconds: float  # units described from their files: each batch decoded, then asked
    fed_seconds: float  # the same with the next batch decoded and prepared while the model runs (retrieval.lmm.feed)
    unfed_busy: float | None
    fed_busy: float | None
    gpu_peak_gb: float | None
    torch: str
    transformers: str
    attention: str = "-"  # the attention kernels the model loaded with (its config's attn_implementation)
    peak_rss_mb: float = 0.0

    @property
    def pairs_per_s(self) -> float:
        return ratio(self.pairs, self.pair_seconds)

    @property
    def caption_tokens_per_s(self) -> float:
        return ratio(self.tokens, self.caption_seconds)


HEAD = ["family", "shape", "card", "batch", "pairs/s", "caption tokens/s", "GPU busy, pairs", "GPU busy, captions",
        "GPU busy from files, unfed -> fed", "s from files, unfed -> fed", "MFU, pairs", "GPU peak GB",
        "attention", "torch", "transformers"]


def _mfu(r: LmmResult) -> str:
    return UNKNOWN_CARD if r.card and r.mfu is None else maybe(r.mfu, "{:.0%}")


def _row(r: LmmResult) -> list:
    return [r.family, r.shape, r.card or r.device, r.batch, f"{r.pairs_per_s:.2f}", f"{r.caption_tokens_per_s:.1f}",
            maybe(r.pair_busy, "{:.0%}"), maybe(r.caption_busy, "{:.0%}"),
            f"{maybe(r.unfed_busy, '{:.0%}')} -> {maybe(r.fed_busy, '{:.0%}')}",
            f"{r.unfed_seconds:.2f} -> {r.fed_seconds:.2f}", _mfu(r), maybe(r.gpu_peak_gb, "{:.1f}"), r.attention,
            r.torch, r.transformers]


SECTION = Section(
    "lmm", "each LMM family in one line: pairs/s, caption tokens/s, GPU busy share (also describing from files "
           "before and with the decode feed), MFU, GPU memory and versions (--shape real on a GPU)",
    LmmResult, "bench.perf.lmm_table:run_lmm", one_table("LMM families: speed and GPU use", HEAD, _row),
    derived=rounded(pairs_per_s=3, caption_tokens_per_s=1))
