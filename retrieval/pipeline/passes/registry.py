"""The index passes, in the order a run runs them: ``retrieval.pipeline.passes`` registers the built-in ones;
another pass is one more module and its ``register``.  Each run makes its own pass of each class, so what a pass
holds between ``setup`` and ``run`` (a model) is that run's."""

from __future__ import annotations

from retrieval.pipeline.passes.base import Counts, IndexPass

_PASSES: list[type[IndexPass]] = []


def register(index_pass: type[IndexPass], before: str | None = None) -> type[IndexPass]:
    """Run ``index_pass`` in every index run from now on: last, or just before the pass named ``before``."""
    if any(p.name == index_pass.name for p in _PASSES):
        raise ValueError(f"index pass {index_pass.name!r} is registered twice")
    names = [p.name for p in _PASSES]
    if before is not None and before not in names:
        raise ValueError(f"no index pass {before!r} to run {index_pass.name!r} before; known: {', '.join(names)}")
    _PASSES.insert(names.index(before) if before is not None else len(_PASSES), index_pass)
    return index_pass


def unregister(name: str) -> None:
    """Run the pass named ``name`` no more (a pass registered for a while, as a test's)."""
    _PASSES[:] = [p for p in _PASSES if p.name != name]


def registered() -> tuple[type[IndexPass], ...]:
    return tuple(_PASSES)


def zero_counts() -> dict[str, Counts]:
    """Every registered pass's counts before it ran: what a report says of a pass that did nothing."""
    return {p.name: p.counts() for p in _PASSES}
