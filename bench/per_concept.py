"""How a benchmark run names the scores of a concept-conditioned indexer's per-concept vectors.

Such an indexer (``indexers.conditioned``) gives each unit a generic vector, scored as any indexer's cosine
under ``computed_similarities/<model>/``, and one vector per concept embedded under that concept's instruction.
The latter's cosine is a concept's own score, as a reranker's answer is: it is written under
``computed_conditioned_similarities/<Concept>/<model>-concepts/``, so the generic and the per-concept rows of
one model stand side by side and show what the instruction buys per concept.
"""

from __future__ import annotations

from typing import Iterable

SUFFIX = "-concepts"  # the per-concept vectors' folder: the generic vectors' folder and this
SHOWN = " (per concept)"  # how a report names that row beside its generic one


def folder(generic: str) -> str:
    """The folder of the per-concept vectors of the model whose generic vectors are in ``generic``."""
    return f"{generic}{SUFFIX}"


def generic_of(model: str) -> str | None:
    """The generic vectors' folder of a per-concept folder; None for any other folder."""
    return model.removesuffix(SUFFIX) if model.endswith(SUFFIX) and len(model) > len(SUFFIX) else None


def shown_names(models: Iterable[str]) -> dict[str, str]:
    """model folder -> how a table names it: a per-concept folder whose generic folder is among ``models`` is
    "<generic> (per concept)", so the two rows read as one model's; every other keeps its folder name."""
    models = list(models)
    present = set(models)
    out = {}
    for model in models:
        generic = generic_of(model)
        out[model] = f"{generic}{SHOWN}" if generic in present else model
    return out
