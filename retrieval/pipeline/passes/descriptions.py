"""The descriptions pass: caption and concept files (``<stem>.txt``, ``<stem>.<concept>.txt`` in the captions
folder) are stored as descriptions, then the run's captioner describes every unit it has not yet (``describe``)
and text indexers embed the captions it wrote."""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator

from retrieval.pipeline.describe import (
    DescribePass,
    captions_per_second,
    describer_key,
    embed_generated_captions,
    store_concept_files,
)
from retrieval.pipeline.passes.base import Counts, IndexPass, PassContext
from retrieval.store.index_dir import protocol_of


@dataclass
class DescriptionCounts(Counts):
    concept_files: int = 0  # files whose caption or concept text files (<stem>.txt, <stem>.location.txt) were stored
    captioned: int = 0  # files a text indexer embedded a generated caption of
    described: int = 0  # units a captioner described in this run (each: a caption and one answer per concept)
    describe_calls: int = 0  # model calls it made
    describe_unreadable: int = 0  # answers stored as unreadable
    describe_seconds: float = 0.0  # time the captioner took

    def derived(self) -> dict:
        return {"captions_per_second": captions_per_second(self.describe_calls, self.describe_seconds)}


class DescriptionsPass(IndexPass):
    name = "descriptions"
    counts = DescriptionCounts

    def __init__(self):
        self.model, self.mapper = None, None

    def pending(self, ctx: PassContext) -> list:
        """The units the captioner has not described (none without one)."""
        return self._describer(ctx).pending() if self.model is not None else []

    @contextmanager
    def setup(self, ctx: PassContext) -> Iterator[bool]:
        """The captioner and who asks it: the executor's workers when it has some for it (Ray actors: the model
        is never loaded here), else this process's model; the pass runs without one too (concept files)."""
        remote = getattr(ctx.executor, "describer", None)
        try:
            if remote is not None and ctx.settings.captioner:
                with remote(ctx.settings.captioner, ctx.root, protocol_of(ctx.catalog)) as (self.model, self.mapper):
                    yield True
            else:
                self.model = ctx.captioner
                yield True
        finally:
            self.model, self.mapper = None, None

    def run(self, ctx: PassContext) -> DescriptionCounts:
        counts = DescriptionCounts()
        if ctx.settings.captions is not None:
            counts.concept_files = store_concept_files(ctx.catalog, ctx.settings.captions)
        if self.model is None:
            return counts
        describe = self._describer(ctx)
        units = describe.pending()
        if units:
            ctx.publish()  # an LMM takes seconds a unit: what was just embedded is searchable meanwhile
        done = describe.run(units)
        ctx.described_by = describer_key(self.model)
        counts.described, counts.describe_calls = done.described, done.calls
        counts.describe_unreadable, counts.describe_seconds = done.unreadable, done.seconds
        if ctx.textual:
            counts.captioned = embed_generated_captions(ctx.catalog, ctx.described_by, ctx.textual)
        return counts

    def _describer(self, ctx: PassContext) -> DescribePass:
        return DescribePass(ctx.catalog, ctx.root, self.model, ctx.note, progress=ctx.progress, mapper=self.mapper)
