"""The default indexer: DINOv2 when its weights can be had, else the offline EfficientNet-Lite0."""

from __future__ import annotations

from indexers.base import INDEXERS
from indexers.factory import available_indexers
from retrieval.core.weights import hub_cached, hub_offline, hub_reachable

PREFERRED = "dinov2"
OFFLINE_FALLBACK = "efficientnet-lite0"
HUB_TIMEOUT = 3.0  # seconds; an unreachable hub must cost a moment, not a stalled run


def default_indexer() -> tuple[str, str | None]:
    """(spec, notice): the spec to use and, when falling back, one line saying why."""
    available_indexers()  # registers the built-in families
    source = INDEXERS.entry(PREFERRED).default_source
    if hub_cached(source) or (not hub_offline() and hub_reachable(HUB_TIMEOUT)):
        return PREFERRED, None
    why = "HF_HUB_OFFLINE is set" if hub_offline() else "the model hub is unreachable"
    return OFFLINE_FALLBACK, (
        f"{PREFERRED} weights ({source}) are not cached and {why}; using {OFFLINE_FALLBACK} "
        f"(pass --indexer to choose)"
    )

