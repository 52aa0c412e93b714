"""``convis describe``: a description pass over an existing index, for the concepts a user names.

reader (the units lacking the captioner's answers to these requests) -> mapper (the captioner) ->
writer (one transaction a unit), then the text indexer embeds each concept's descriptions into its
own signal and the FAISS indices and snapshot are published.  Incremental and resumable as an index
run's pass is: a unit answered once is never asked again, a killed run loses the unit in flight.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from indexers.base import Indexer
from retrieval.core.errors import ConvisError
from retrieval.lmm.captioning import Describer, Requests
from retrieval.pipeline import description_index
from retrieval.pipeline.describe import (
    DescribeCounts,
    DescribePass,
    captions_per_second,
    describer_key,
    embed_generated_captions,
)
from retrieval.pipeline.progress import Progress
from retrieval.store.catalog import Catalog
from retrieval.store.publish import publish


class NoCaptionerError(ConvisError, ValueError):
    """No captioner was named and the index never had one."""

    exit_code, http_status = 2, 400


@dataclass
class DescribeReport:
    captioner: str
    concepts: list[str]
    units: int = 0  # units that lacked an answer when the run started
    counts: DescribeCounts = field(default_factory=DescribeCounts)  # what the pass did
    description_vectors: int = 0
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        c = self.counts
        return {"captioner": self.captioner, "concepts": self.concepts, "units": self.units,
                "described": c.described, "calls": c.calls, "unreadable": c.unreadable, "failed": c.failed,
                "describe_seconds": round(c.seconds, 3), "captions_per_second": captions_per_second(c.calls, c.seconds),
                "description_vectors": self.description_vectors, "seconds": round(self.seconds, 3),
                "notes": self.notes}


def describe_index(catalog: Catalog, index_dir: Path, root: Path, model: Describer, requests: Requests,
                   indexers: Sequence[Indexer], progress: Progress | None = None) -> DescribeReport:
    """Ask ``model`` ``requests`` about every unit lacking its answers; embed and publish what it wrote
    (``indexers``: the index's text indexers and CLIP-family ones, which embed the captions)."""
    started = time.perf_counter()
    report = DescribeReport(model.model_id, list(requests))

    def note(text: str) -> None:
        report.notes.append(text)
        if progress is not None:
            progress("note", {"text": text})

    generation = catalog.generation
    describe = DescribePass(catalog, root, model, note, progress=progress, requests=requests)
    units = describe.pending()
    report.units, report.counts = len(units), describe.run(units)
    embed_generated_captions(catalog, describer_key(model), [ix for ix in indexers if ix.kind == "text"])
    synced = description_index.sync(catalog, indexers, [describer_key(model)])
    report.description_vectors = synced.embedded
    for text in synced.notes:
        note(text)
    if synced.embedded or synced.removed or catalog.generation != generation:
        publish(catalog, index_dir)  # the texts and vectors changed
    report.seconds = time.perf_counter() - started
    return report
