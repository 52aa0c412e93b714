"""Describing units, each LMM family: captions/s and generated tokens/s on the describe path."""

from __future__ import annotations

from dataclasses import dataclass

from bench.perf.section import Section, maybe, one_table, ratio, rounded


@dataclass(frozen=True)
class DescribeResult:
    """One family describing units one way: each request a generation, every question of the batch in one, or every
    question after one pass over its unit's video (``generate_calls`` counts such a batch's decoding as one call)."""

    family: str
    shape: str
    device: str
    way: str  # bench.perf.lmm_describe.WAYS: "one request a call", "every question at once", "one vision pass a unit"
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
        return ratio(self.answers, self.seconds)

    @property
    def tokens_per_s(self) -> float:
        return ratio(self.tokens, self.seconds)


HEAD = ["family", "shape", "device", "way", "units a batch", "units", "answers", "new tokens", "generate calls",
        "seconds", "answers/s", "tokens/s", "GPU peak GB", "GPU busy in kernels"]


def _row(r: DescribeResult) -> list:
    return [r.family, r.shape, r.device, r.way, r.batch, r.units, r.answers, r.tokens, r.generate_calls,
            f"{r.seconds:.2f}", f"{r.answers_per_s:.2f}", f"{r.tokens_per_s:.1f}", maybe(r.gpu_peak_gb, "{:.1f}"),
            maybe(r.kernel_share, "{:.0%}")]


SECTION = Section(
    "describe", "each LMM family's captions/s and generated tokens/s on the describe path, one request a call, "
                "every question at once and one vision pass a unit (--shape)",
    DescribeResult, "bench.perf.lmm_describe:run_lmm_describe",
    one_table("Describing units, each LMM family", HEAD, _row), derived=rounded(answers_per_s=3, tokens_per_s=1))
