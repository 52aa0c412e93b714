"""The captions pass: text indexers embed each indexed file's caption file (``<stem>.txt`` in the run's captions
folder, ``--captions``), once a file."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from retrieval.core.errors import one_line
from retrieval.core.user_files import UserFileError, read_text
from retrieval.pipeline.passes.base import Counts, IndexPass, PassContext


@dataclass
class CaptionCounts(Counts):
    captioned: int = 0  # files a text indexer embedded a caption of (a caption file, or one a captioner wrote)


class CaptionsPass(IndexPass):
    name = "captions"
    counts = CaptionCounts

    def pending(self, ctx: PassContext) -> list[tuple[object, str, Path]]:
        """(text indexer, file, its caption file) of each indexed file with a caption file the indexer lacks."""
        captions = ctx.settings.captions
        if captions is None:
            return []
        work = []
        for ix in ctx.textual:
            done = ctx.catalog.indexed_with(ix.model_id)
            for rel, state in ctx.catalog.file_states().items():
                caption = captions / f"{Path(rel).stem}.txt"
                if state.status == "ok" and rel not in done and caption.is_file():
                    work.append((ix, rel, caption))
        return work

    def run(self, ctx: PassContext) -> CaptionCounts:
        counts = CaptionCounts()
        for ix, rel, caption in self.pending(ctx):
            try:
                text = read_text(caption, "caption", errors="replace").strip()
            except UserFileError as exc:  # one caption the run cannot read costs that caption, not the run
                ctx.note(f"{one_line(exc, None)}; {rel} has no caption signal")
                continue
            units = len(ctx.catalog.unit_vectors(rel, ctx.visual[0].model_id)) if ctx.visual else 1
            ctx.catalog.add_vectors(rel, {ix.model_id: np.repeat(ix.embed_texts([text]), max(units, 1), 0)})
            counts.captioned += 1
        return counts
