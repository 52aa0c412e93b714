"""Reranking: its cost cold, and again from the score cache."""

from __future__ import annotations

from dataclasses import dataclass

from bench.perf.section import Check, Section, one_table, ratio, rounded
from bench.perf.targets import TARGET_CACHE_SPEEDUP


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
        return ratio(self.first_s, self.repeat_s)


HEAD = ["reranker", "pairs", "load s", "first run s", "s / pair", "decodes", "cached repeat ms", "speed-up",
        "model pairs on repeat", "peak RSS MB"]


def _row(r: RerankResult) -> list:
    return [r.reranker, r.pairs, f"{r.load_s:.2f}", f"{r.first_s:.2f}", f"{r.per_pair_s:.3f}", r.decodes,
            f"{r.repeat_s * 1e3:.1f}", f"{r.speedup:.0f}x", r.repeat_model_pairs, f"{r.peak_rss_mb:.0f}"]


def rerank_checks(rows: list[RerankResult]) -> list[Check]:
    found = []
    for r in rows:
        found.append(("cached rerank repeat >= 100x faster", f"{r.speedup:.0f}x ({r.first_s:.2f} s -> "
                      f"{r.repeat_s * 1e3:.1f} ms)", r.speedup >= TARGET_CACHE_SPEEDUP and r.repeat_model_pairs == 0))
        found.append(("rerank decodes each clip once per command", f"{r.decodes} decodes for {r.pairs + 1} clips",
                      r.decodes == r.pairs + 1 and r.repeat_decodes == 0))
    return found


SECTION = Section(
    "rerank", "reranking cost, cold and again from the score cache", RerankResult, "bench.perf.rerank:run_rerank",
    one_table("Reranking", HEAD, _row), derived=rounded(per_pair_s=None, speedup=None), checks=rerank_checks)
