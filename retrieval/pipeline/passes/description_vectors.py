"""The description vectors pass: text indexers embed each concept's descriptions and each line source's lines
into their own signals, CLIP-family indexers the captions; only what changed (``description_index``)."""

from __future__ import annotations

from dataclasses import dataclass, field

from retrieval.pipeline import description_index
from retrieval.pipeline.description_index import split_signal
from retrieval.pipeline.passes.base import Counts, IndexPass, PassContext


@dataclass
class DescriptionVectorCounts(Counts):
    description_vectors: int = 0  # descriptions embedded into their concept's signal in this run
    description_signals: list[str] = field(default_factory=list)  # concepts the index has description signals of
    caption_signals: list[str] = field(default_factory=list)  # CLIP-family text vectors of the captions (CLIPScore)


class DescriptionVectorsPass(IndexPass):
    name = "description_vectors"
    counts = DescriptionVectorCounts

    def pending(self, ctx: PassContext) -> list[tuple[str, int]]:
        """(signal, unit id) of each unit whose vector is missing or made of a text that changed since."""
        return description_index.stale(ctx.catalog, self._indexers(ctx), self._prefer(ctx))

    def run(self, ctx: PassContext) -> DescriptionVectorCounts:
        synced = description_index.sync(ctx.catalog, self._indexers(ctx), self._prefer(ctx))
        for text in synced.notes:
            ctx.note(text)
        return DescriptionVectorCounts(synced.embedded, [split_signal(s)[1] for s in synced.signals],
                                       synced.caption_signals)

    def _indexers(self, ctx: PassContext) -> list:
        return [*ctx.textual, *ctx.visual]

    def _prefer(self, ctx: PassContext) -> list:
        return [ctx.described_by] if ctx.described_by is not None else []
