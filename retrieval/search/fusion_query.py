"""Query-time fusion: each concept's score from the learned combination of every available signal."""

from __future__ import annotations

from pathlib import Path

from retrieval.core.concepts import Concept
from retrieval.search.fusion import FusionError, FusionModel, default_weights_path, reranker_signal
from retrieval.search.results import Hit


def load_fusion(spec) -> FusionModel:
    """A FusionModel, a weights file, or "default" (the weights shipped with convis)."""
    if isinstance(spec, FusionModel):
        return spec
    path = default_weights_path() if str(spec) == "default" else Path(spec)
    if not path.is_file():
        raise FileNotFoundError(f"fusion weights not found: {spec}")
    return FusionModel.load(path)


def fusion_label(spec) -> str:
    """How a result names the weights it was fused with: the file, "default", or "model" for an object."""
    return "model" if isinstance(spec, FusionModel) else str(spec)


def fuse(hits: list[Hit], concepts: list[Concept], model: FusionModel, sims: dict[int, dict[str, float]],
         reranker: str | None) -> tuple[list[Hit], list[str]]:
    """Each hit with every concept's score replaced by the fused prediction (human 1-5 scale), and the notices.

    ``sims[unit][model_id]`` are the indexer similarities; the reranker's per-concept score (if any)
    is the hit's current score. A concept the weights do not cover keeps its score, with a notice.
    """
    skipped: set[str] = set()
    fused = []
    for hit in hits:
        hit_signals = {model_id.split(":")[0]: value for model_id, value in sims.get(hit.unit_id, {}).items()}
        scores, contributions = dict(hit.scores), {}
        for c in concepts:
            inputs = dict(hit_signals)
            if reranker is not None:
                inputs[reranker_signal(reranker)] = hit.scores[c.key]
            try:
                prediction = model.predict(c.key, inputs)
            except FusionError:
                skipped.add(c.key)
                continue
            scores[c.key] = prediction.score
            contributions[c.key] = {"intercept": prediction.intercept, **prediction.contributions}
        fused.append(hit.fused(scores, contributions, concepts))
    notices = [f"{key}: the fusion weights cover none of the available signals; kept its own score"
               for key in sorted(skipped)]
    return fused, notices
