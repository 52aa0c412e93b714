"""The concept vectors pass: each conditioned indexer embeds every unit once per concept under that concept's
instruction, into a signal per concept; only what is missing or made under another wording
(``concept_index``)."""

from __future__ import annotations

from dataclasses import dataclass, field

from retrieval.media.video_decoder import VideoDecoder
from retrieval.pipeline import concept_index
from retrieval.pipeline.passes.base import Counts, IndexPass, PassContext


@dataclass
class ConceptVectorCounts(Counts):
    concept_vectors: int = 0  # units x concepts embedded under a concept's instruction in this run
    concept_signals: list[str] = field(default_factory=list)  # the index's per-concept signals (model id#concept)


class ConceptVectorsPass(IndexPass):
    name = "concept_vectors"
    counts = ConceptVectorCounts

    def pending(self, ctx: PassContext) -> list[tuple[str, int]]:
        """(signal, unit id) of each concept vector missing, made under another instruction, or of a lost unit."""
        return concept_index.stale(ctx.catalog, ctx.visual)

    def run(self, ctx: PassContext) -> ConceptVectorCounts:
        if not concept_index.conditioned_of(ctx.catalog, ctx.visual):
            return ConceptVectorCounts()
        decode = concept_index.decode_unit(VideoDecoder(device=ctx.settings.decode_device))
        synced = concept_index.sync(ctx.catalog, ctx.visual, ctx.root, decode,
                                    lambda n: ctx.progress("concept_vectors", {"units": n}))
        for text in synced.notes:
            ctx.note(text)
        if synced.embedded:
            ctx.publish()
        return ConceptVectorCounts(synced.embedded, synced.signals)
