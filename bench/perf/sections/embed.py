"""Concept-conditioned embedding: units/s x concepts of each instruction-following family (--shape)."""

from __future__ import annotations

from dataclasses import dataclass

from bench.perf.section import Section, maybe, one_table, ratio, rounded


@dataclass(frozen=True)
class ConditionedEmbedResult:
    """One checkpoint embedding every unit under the generic instruction and each concept's."""

    family: str  # the family and its size: "qwen3-vl-embedding-2b"
    shape: str  # "tiny" (random tiny checkpoint) or "7b" (the real model's dimensions, random weights)
    device: str
    units: int
    concepts: int  # instructions a unit is embedded under (the generic one included)
    frames: int  # frames the model saw a unit, on average
    seconds: float
    gpu_peak_gb: float | None = None  # torch.cuda.max_memory_allocated over the timed run (None: no GPU)

    @property
    def vectors_per_s(self) -> float:
        return ratio(self.units * self.concepts, self.seconds)


HEAD = ["family", "shape", "device", "units", "instructions", "frames a unit", "seconds", "units x instructions/s",
        "GPU peak GB"]


def _row(r: ConditionedEmbedResult) -> list:
    return [r.family, r.shape, r.device, r.units, r.concepts, r.frames, f"{r.seconds:.2f}", f"{r.vectors_per_s:.2f}",
            maybe(r.gpu_peak_gb, "{:.1f}")]


SECTION = Section(
    "embed", "each instruction-following embedder's units/s x concepts (one vector per unit and instruction) and GPU "
             "memory (--shape)",
    ConditionedEmbedResult, "bench.perf.conditioned_embed:run_conditioned_embed",
    one_table("Concept-conditioned embedding", HEAD, _row), derived=rounded(vectors_per_s=3))
