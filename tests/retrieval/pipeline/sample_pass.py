"""A sample index pass, written as any new kind of pass is: this one module, and ``register(UnitTally)``.

It notes how many units each indexed file's bytes have, once per bytes, in a catalog setting of its own; what it
has noted stays noted, so a run stopped half-way leaves the rest pending for the next run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from retrieval.pipeline.passes.base import Counts, IndexPass, PassContext

PREFIX = "unit_tally:"  # catalog setting per file's bytes: the units it has


@dataclass
class TallyCounts(Counts):
    tallied_files: int = 0
    tallied_units: int = 0


class UnitTally(IndexPass):
    name = "unit_tally"
    counts = TallyCounts
    stop_after: ClassVar[int | None] = None  # files after which the pass fails (a run killed half-way)

    def pending(self, ctx: PassContext) -> list[tuple[str, str]]:
        """(path, bytes) of each indexed file whose bytes have no tally yet."""
        return [(rel, state.content_hash) for rel, state in sorted(ctx.catalog.file_states().items())
                if state.status == "ok" and ctx.catalog.setting(PREFIX + state.content_hash) is None]

    def run(self, ctx: PassContext) -> TallyCounts:
        counts = TallyCounts()
        for rel, digest in self.pending(ctx):
            if counts.tallied_files == self.stop_after:
                raise RuntimeError("the sample pass stops here")
            units = len(ctx.catalog.file_units(rel))
            ctx.catalog.set_setting(PREFIX + digest, str(units))
            counts.tallied_files += 1
            counts.tallied_units += units
        return counts
