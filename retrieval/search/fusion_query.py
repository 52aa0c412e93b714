"""Query-time fusion: each concept's score from the learned combination of every available signal."""

from __future__ import annotations

from pathlib import Path

from retrieval.core.concepts import Concept, combine
from retrieval.search.fusion import FusionError, FusionModel, default_weights_path, reranker_signal
from retrieval.search.ranking import Hit, order


def load_fusion(spec) -> FusionModel:
    """A FusionModel, a weights file, or "default" (the weights shipped with convis)."""
    if isinstance(spec, FusionModel):
        return spec
    path = default_weights_path() if str(spec) == "default" else Path(spec)
    if not path.is_file():
        raise FileNotFoundError(f"fusion weights not found: {spec}")
    return FusionModel.load(path)


def fuse(hits: list[Hit], concepts: list[Concept], model: FusionModel, sims: dict[int, dict[str, float]],
         reranker: str | None, notices: list[str]) -> list[Hit]:
    """Replace each concept's score by the fused prediction (human 1-5 scale) and re-rank.

    ``sims[unit][model_id]`` are the indexer similarities; the reranker's per-concept score (if any)
    is the hit's current score. A concept the weights do not cover keeps its score, with a notice.
    """
    skipped: set[str] = set()
    for hit in hits:
        signals = {model_id.split(":")[0]: value for model_id, value in sims.get(hit.unit_id, {}).items()}
        for c in concepts:
            inputs = dict(signals)
            if reranker is not None:
                inputs[reranker_signal(reranker)] = hit.scores[c.key]
            try:
                fused = model.predict(c.key, inputs)
            except FusionError:
                skipped.add(c.key)
                continue
            hit.scores[c.key] = fused.score
            hit.contributions[c.key] = {"intercept": fused.intercept, **fused.contributions}
        hit.total = None if None in hit.scores.values() else combine(hit.scores, concepts)
    for key in sorted(skipped):
        notices.append(f"{key}: the fusion weights cover none of the available signals; kept its own score")
    return order(hits)
