"""Query-time fusion: each concept's score from the learned combination of every available signal."""

from __future__ import annotations

from pathlib import Path

from retrieval.core.concepts import RATING_SPAN, Concept, from_rating
from retrieval.search.fusion import (
    DESCRIPTIONS,
    FusedScore,
    FusionError,
    FusionModel,
    default_weights_path,
    reranker_signal,
)
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
         reranker: str | None, described: dict[str, str] | None = None) -> tuple[list[Hit], list[str]]:
    """Each hit with every concept's score replaced by the fused prediction, and the notices.

    ``sims[unit][model_id]`` are the indexer similarities, and the similarity of each concept's descriptions
    (``described``: concept -> its description signal) is that concept's ``descriptions`` signal; the
    reranker's per-concept 1-5 answer (if any) is the hit's rating. A prediction is a human 1-5 rating: the hit
    keeps it as its rating and scores it on the 0-1 scale every score is on, with contributions in 0-1 points
    that add up to that score. A concept the weights do not cover keeps its score, with a notice.
    """
    described = described or {}
    skipped: set[str] = set()
    fused = []
    for hit in hits:
        found = sims.get(hit.unit_id, {})
        hit_signals = {model_id.split(":")[0]: value for model_id, value in found.items()
                       if model_id not in described.values()}
        ratings, contributions, inputs = {}, {}, {}
        for c in concepts:
            given = dict(hit_signals)
            if described.get(c.key) in found:  # this concept's descriptions, compared by the text indexer
                given[DESCRIPTIONS] = found[described[c.key]]
            if reranker is not None:
                given[reranker_signal(reranker)] = hit.ratings.get(c.key)
            try:
                prediction = model.predict(c.key, given)
            except FusionError:
                skipped.add(c.key)
                continue
            ratings[c.key], contributions[c.key] = prediction.score, unit_contributions(prediction)
            inputs[c.key] = {signal: given[signal] for signal in prediction.used}
        fused.append(hit.fused(ratings, contributions, inputs, concepts))
    notices = [f"{key}: the fusion weights cover none of the available signals; kept its own score"
               for key in sorted(skipped)]
    return fused, notices + [note for c in concepts for note in _tie_notices(fused, c.key)]


def _tie_notices(hits: list[Hit], key: str) -> list[str]:
    """Hits given one fused score although their signals differ: the learned map is flat over their values
    (isotonic maps are step functions), which the user would otherwise read as a bug."""
    by_score: dict[float, list[Hit]] = {}
    for hit in hits:
        if key in hit.contributions:
            by_score.setdefault(hit.scores[key], []).append(hit)
    return [f"{key}: {len(tied)} hits share one fused score ({score:.3f}) although their signals differ: the "
            "fusion weights rate those values alike (equal totals are ordered by recall similarity)"
            for score, tied in by_score.items() if len({tuple(h.inputs[key].items()) for h in tied}) > 1]


def unit_contributions(prediction: FusedScore) -> dict[str, float]:
    """A prediction's intercept and contributions on the 0-1 scale: they add up to its 0-1 score."""
    return {"intercept": from_rating(prediction.intercept),
            **{signal: points / RATING_SPAN for signal, points in prediction.contributions.items()}}
