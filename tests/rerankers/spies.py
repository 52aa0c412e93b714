"""Stand-ins that record what a reranker hands its processor."""

from __future__ import annotations


class ProcessorSpy:
    """Stands in for a processor, recording each call's keyword arguments and outputs."""

    def __init__(self, inner):
        self._inner = inner
        self.calls: list[tuple[dict, dict]] = []

    def __getattr__(self, name):
        return getattr(self._inner, name)

    def __call__(self, *args, **kwargs):
        out = self._inner(*args, **kwargs)
        self.calls.append((kwargs, out))
        return out
