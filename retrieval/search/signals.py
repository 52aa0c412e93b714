"""Which indexed signal scores which concept before (or without) LMM reranking.

ConViS-Bench Table 3 measured how well each global signal follows human judgement
per concept: DINOv2 is best for location; SBERT over captions is best for main
action, main subjects, main objects and order of actions; CLIP-based scores come
next.  The table below orders the indexers accordingly; the first one present in
the index is used.  Override per concept with ``--signal CONCEPT=INDEXER``.
"""

from __future__ import annotations

from typing import Iterable

from retrieval.core.concepts import parse_concept

DEFAULT_ORDER: dict[str, tuple[str, ...]] = {
    "location": ("dinov2", "clip", "efficientnet-lite0", "internvideo", "videomae", "text"),
    "main-action": ("text", "internvideo", "videomae", "clip", "dinov2", "efficientnet-lite0"),
    "main-subjects": ("text", "dinov2", "clip", "efficientnet-lite0", "internvideo", "videomae"),
    "main-objects": ("text", "dinov2", "clip", "efficientnet-lite0", "internvideo", "videomae"),
    "order-of-actions": ("text", "internvideo", "videomae", "clip", "dinov2", "efficientnet-lite0"),
}
# free-text concepts: visual-semantic embeddings first
FALLBACK_ORDER: tuple[str, ...] = ("clip", "dinov2", "internvideo", "videomae", "efficientnet-lite0", "text")


class SignalError(ValueError):
    pass


def parse_overrides(specs: Iterable[str]) -> dict[str, str]:
    """``location=clip`` -> {"location": "clip"} (the concept part is slugged like --concept)."""
    out = {}
    for spec in specs:
        concept, sep, indexer = spec.partition("=")
        if not sep or not concept.strip() or not indexer.strip():
            raise SignalError(f"--signal takes CONCEPT=INDEXER, got {spec!r}")
        out[parse_concept(concept).key] = indexer.strip()
    return out


def choose(concept_key: str, available: dict[str, str], overrides: dict[str, str] | None = None) -> str:
    """Pick the indexer (model id) for a concept. ``available`` maps indexer name -> model id."""
    wanted = (overrides or {}).get(concept_key)
    if wanted:
        for name, model_id in available.items():
            if wanted in (name, model_id):
                return model_id
        raise SignalError(f"--signal {concept_key}={wanted}: that indexer is not in this index "
                          f"(indexed: {', '.join(sorted(available)) or 'none'})")
    for name in DEFAULT_ORDER.get(concept_key, FALLBACK_ORDER):
        if name in available:
            return available[name]
    if available:
        return available[sorted(available)[0]]
    raise SignalError("nothing is indexed yet: run `convis index FOLDER` first")
