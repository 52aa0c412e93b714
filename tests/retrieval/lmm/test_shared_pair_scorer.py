"""Pairs sharing their anchor through the pair scorer, as ``convis query`` asks them, in every family that shares:
shared and unshared scores agree to 1e-5 in both directions (``--symmetric``), each video goes through the vision
tower once, and the work counts say so."""

from __future__ import annotations

import pytest

from retrieval.core.concepts import parse_concepts
from retrieval.lmm.clips import ClipRef, FrameCache
from retrieval.lmm.similarity import PairScorer
from tests import media
from tests.tiny_rerankers import TOLERANCE, build, noise

QWENS = ["qwen2_vl", "qwen2_5_vl"]


@pytest.fixture(scope="module")
def clip_files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("shared-qwen-clips")
    sizes = [(64, 48), (48, 64), (80, 40), (64, 48)]  # (width, height): the anchor, then candidates of other sizes
    return [ClipRef(str(media.make_clip(folder / f"{i}.mp4", frames=12, fps=4, size=size,
                                        pixels=lambda f, i=i, s=size: noise(1, s[1], s[0], seed=100 * i + f)[0])),
                    f"clip{i}") for i, size in enumerate(sizes)]


def query(reranker, clips, concepts, symmetric: bool = False):
    """One anchor against the other clips, concept by concept, as ``convis query`` asks the reranker."""
    scorer = PairScorer(reranker, None, FrameCache(), "expected", symmetric)
    anchor, *candidates = clips
    return [scorer.score([(anchor, c) for c in candidates], concept) for concept in concepts]


@pytest.mark.parametrize("family", QWENS)
def test_work_counts_and_symmetric_scores_through_the_pair_scorer(tiny_folders, family, clip_files):
    concepts = parse_concepts(["location", "main action"])
    n, c = len(clip_files) - 1, len(concepts)
    reranker = build(tiny_folders, family)
    shared = query(reranker, clip_files, concepts)
    assert dict(reranker.work) == {"vision_calls": 1 + n, "prefix_passes": c, "pair_passes": n * c}

    alone = build(tiny_folders, family, share=False)
    assert_same_scores(reranker, alone, clip_files, concepts, shared)
    assert dict(alone.work) == {"vision_calls": c * 2 * n * 3, "pair_passes": n * c * 3}  # one way, then both ways


def assert_same_scores(shared, alone, clips, concepts, shared_scores) -> None:
    """``alone`` (unshared) scores as ``shared`` did (``shared_scores``), then both score both ways alike."""
    for got, want in zip(shared_scores, query(alone, clips, concepts), strict=True):
        assert [s.probs for s in got] == [pytest.approx(s.probs, abs=TOLERANCE) for s in want]
    both = query(shared, clips, concepts, symmetric=True)
    for got, want in zip(both, query(alone, clips, concepts, symmetric=True), strict=True):
        assert [s.score for s in got] == [pytest.approx(s.score, abs=TOLERANCE) for s in want]
        assert [s.probs for s in got] == [pytest.approx(s.probs, abs=TOLERANCE) for s in want]


@pytest.mark.parametrize("family", ["llava", "internvl"])
def test_symmetric_scores_and_vision_calls_through_the_pair_scorer(tiny_folders, family, clip_files):
    concepts = parse_concepts(["location", "main action"])
    n = len(clip_files) - 1
    reranker, alone = build(tiny_folders, family), build(tiny_folders, family, share=False)
    shared = query(reranker, clip_files, concepts)
    assert reranker.work["vision_calls"] == 1 + n and reranker.work["pair_passes"] == n * len(concepts)
    assert_same_scores(reranker, alone, clip_files, concepts, shared)
    assert alone.work["vision_calls"] == len(concepts) * 2 * n * 3  # one way, then both ways
