"""Concept-conditioned embedding: one model, one vector per unit and instruction.

An instruction-following embedder (Qwen3-VL-Embedding) reads an instruction beside its input: the same clip
embedded under "the place where this happens" and under "the action being performed" gives two vectors.  A
family's instructions are data (``Instructions``): one for the unit's generic vector, one per ConViS concept,
a template for any other concept, and one for a text query.  Their ``version`` is part of every stored
vector's identity, so a changed instruction embeds again, as a changed prompt describes again.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import ClassVar, Mapping, Sequence

import numpy as np

from indexers.base import Indexer

CONCEPT_SLOT = "{concept}"  # where a free-text concept's name goes in ``Instructions.template``


@dataclass(frozen=True)
class Instructions:
    """What an instruction-following embedder is told, per use (see the module's notes)."""

    generic: str  # the unit's generic vector: no concept
    query: str  # a text query searching the generic vectors (``convis search``)
    concepts: Mapping[str, str] = field(default_factory=dict)  # ConViS concept key -> its instruction
    template: str = "Represent the " + CONCEPT_SLOT + " of this video."  # any other concept
    source: str = ""  # where the wording comes from (a reference, or convis's own)

    def for_concept(self, key: str, words: str | None = None) -> str:
        """The instruction of the concept ``key`` (a ConViS key, or a free-text concept's key); ``words`` is how a
        free-text concept reads in the template (default: its key)."""
        if key in self.concepts:
            return self.concepts[key]
        return self.template.replace(CONCEPT_SLOT, words or key)

    @property
    def version(self) -> str:
        """A digest of every wording here: stored with each vector, so a changed one is embedded again."""
        text = "\n".join([self.generic, self.query, self.template, *(f"{k}={v}" for k, v in
                                                                      sorted(self.concepts.items()))])
        return hashlib.sha1(text.encode("utf-8")).hexdigest()[:12]


class ConditionedIndexer(Indexer):
    """An indexer whose vectors depend on an instruction: ``None`` means the family's generic one."""

    kind: ClassVar[str] = "video"
    conditioned: ClassVar[bool] = True
    instructions: Instructions

    def embed_units(self, units: Sequence[np.ndarray], instruction: str | None = None) -> np.ndarray:
        """``units[i]`` is (T, H, W, 3) uint8 RGB; one unit-norm row per unit, under ``instruction``."""
        raise NotImplementedError

    def embed_texts(self, texts: Sequence[str], instruction: str | None = None) -> np.ndarray:
        """One unit-norm row per text, under ``instruction`` (default: the family's query instruction)."""
        raise NotImplementedError


def is_conditioned(indexer: Indexer) -> bool:
    """Whether ``indexer`` takes an instruction (and so can store one vector per concept)."""
    return bool(getattr(indexer, "conditioned", False))
