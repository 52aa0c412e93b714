"""The run's indexers, built only when a file needs them.

Loading weights takes seconds to minutes; a re-run that finds nothing new must not pay for it.
An indexer the catalog already knows is described by its catalog row (id, kind, width), which
is all planning needs, and its model is built on first use.
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from indexers.base import INDEXERS, Indexer
from retrieval.core.registry import UnknownModelError
from retrieval.core.sampling import FrameSpec
from retrieval.store.catalog.records import IndexerRow


class LazyIndexer(Indexer):
    """An indexer the catalog knows: identity from its row, the model from ``build`` when first used."""

    def __init__(self, row: IndexerRow, build: Callable[[], Indexer]):
        self._row, self._build, self._model = row, build, None
        self.name, self.source, self.dim, self.kind = row.name, row.source, row.dim, row.kind

    @property
    def built(self) -> bool:
        return self._model is not None

    @property
    def model(self) -> Indexer:
        if self._model is None:
            self._model = self._build()
        return self._model

    @property
    def model_id(self) -> str:
        return self._row.indexer  # the id its vectors are stored under

    @property
    def frame_spec(self) -> FrameSpec:
        return self.model.frame_spec

    @frame_spec.setter
    def frame_spec(self, spec: FrameSpec) -> None:
        self.model.frame_spec = spec

    @property
    def protocol(self) -> str:
        return self.model.protocol

    def embed_units(self, units: Sequence[np.ndarray], *instruction: str | None) -> np.ndarray:
        return self.model.embed_units(units, *instruction)  # a conditioned model's instruction, when given

    def embed_texts(self, texts: Sequence[str], *instruction: str | None) -> np.ndarray:
        return self.model.embed_texts(texts, *instruction)

    def __getattr__(self, name: str):
        if name.startswith("_"):  # attributes of this proxy itself, asked for before __init__ set them
            raise AttributeError(name)
        return getattr(self.model, name)  # anything else a model has (its device, ...)


def run_indexers(specs: Sequence[str], rows: Sequence[IndexerRow], protocol: str,
                 build: Callable[[str], Indexer]) -> list[Indexer]:
    """The indexers for ``specs``: those the catalog has a row for (``rows``) built on first use, the others
    now (a new indexer's kind and width come from its model)."""
    known = {row.indexer: row for row in rows}
    indexers: list[Indexer] = []
    for spec in specs:
        row = known.get(spec) or known.get(model_id_of(spec, protocol) or "")
        indexers.append(LazyIndexer(row, lambda spec=spec: build(spec)) if row else build(spec))
    return indexers


def model_id_of(spec: str, protocol: str) -> str | None:
    """The id the factory's model for ``spec`` has, without building it (None: no family takes the spec)."""
    try:
        resolved = INDEXERS.resolve(spec)
    except UnknownModelError:
        return None  # building it says why
    return f"{resolved.entry.name}:{resolved.source or resolved.entry.source_for(protocol)}"
