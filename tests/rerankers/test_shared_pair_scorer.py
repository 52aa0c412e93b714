"""LLaVA-OneVision and InternVL through the pair scorer, as ``convis query`` asks them: shared and unshared scores
agree to 1e-5 in both directions (``--symmetric``), and each video goes through the vision tower once."""

from __future__ import annotations

import pytest

from retrieval.core.concepts import parse_concepts
from tests.rerankers.test_shared_qwen import assert_same_scores, build, clip_files, query  # noqa: F401 (a fixture)


@pytest.mark.parametrize("family", ["llava", "internvl"])
def test_symmetric_scores_and_vision_calls_through_the_pair_scorer(tiny_folders, family, clip_files):  # noqa: F811
    concepts = parse_concepts(["location", "main action"])
    n = len(clip_files) - 1
    reranker, alone = build(tiny_folders, family), build(tiny_folders, family, share=False)
    shared = query(reranker, clip_files, concepts)
    assert reranker.work["vision_calls"] == 1 + n and reranker.work["pair_passes"] == n * len(concepts)
    assert_same_scores(reranker, alone, clip_files, concepts, shared)
    assert alone.work["vision_calls"] == len(concepts) * 2 * n * 3  # one way, then both ways
