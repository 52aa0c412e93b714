"""LLaVA-OneVision and InternVL through the pair scorer, as ``convis query`` asks them: shared and unshared scores
agree to 1e-5 in both directions (``--symmetric``), and each video goes through the vision tower once."""

from __future__ import annotations

import pytest

from retrieval.core.concepts import parse_concepts
from tests.rerankers.test_shared_qwen import TOLERANCE, build, clip_files, query  # noqa: F401 (a fixture)


@pytest.mark.parametrize("family", ["llava", "internvl"])
def test_symmetric_scores_and_vision_calls_through_the_pair_scorer(tiny_folders, family, clip_files):  # noqa: F811
    concepts = parse_concepts(["location", "main action"])
    n = len(clip_files) - 1
    reranker, alone = build(tiny_folders, family), build(tiny_folders, family, share=False)
    shared = query(reranker, clip_files, concepts)
    assert reranker.work["vision_calls"] == 1 + n and reranker.work["pair_passes"] == n * len(concepts)
    unshared = query(alone, clip_files, concepts)
    assert alone.work["vision_calls"] == len(concepts) * 2 * n
    for got, want in zip(shared, unshared, strict=True):
        assert [s.probs for s in got] == [pytest.approx(s.probs, abs=TOLERANCE) for s in want]
    both = query(reranker, clip_files, concepts, symmetric=True)
    both_alone = query(alone, clip_files, concepts, symmetric=True)
    for got, want in zip(both, both_alone, strict=True):
        assert [s.score for s in got] == [pytest.approx(s.score, abs=TOLERANCE) for s in want]
