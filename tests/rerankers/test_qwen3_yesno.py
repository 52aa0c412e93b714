"""qwen3-vl-reranker: a (anchor, candidate) pair scored as P(yes) under the concept's instruction, on its own
0-1 scale; batched pairs score as each alone."""

from __future__ import annotations

import numpy as np
import pytest

from rerankers.base import YES_PROBABILITY
from rerankers.factory import create_reranker
from rerankers.prompts.yesno import SYSTEM
from tests.rerankers.spies import ProcessorSpy
from tests.tiny_rerankers import TOLERANCE, noise


@pytest.fixture
def reranker(tiny_folders):
    return create_reranker(f"qwen3-vl-reranker:{tiny_folders['qwen3_vl_reranker']}", device="cpu",
                           frames_per_video=4)


def pairs(n: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """One anchor and ``n`` candidates of other sizes, on the 32-px grid (prepared frames)."""
    anchor = noise(4, 64, 96, seed=0)
    sizes = [(96, 64), (64, 128), (64, 96)]
    return [(anchor, noise(4, *sizes[i % len(sizes)], seed=1 + i)) for i in range(n)]


def test_the_tiny_checkpoint_scores_a_probability_on_its_own_scale(reranker):
    assert reranker.name == "qwen3-vl-reranker" and reranker.scale == YES_PROBABILITY
    scores = reranker.score_pairs(pairs(2), "Location", prepared=True)
    assert all(0.0 <= s.score <= 1.0 and s.scale == YES_PROBABILITY for s in scores)
    assert all(s.unit_score == s.score for s in scores)  # a probability is not rescaled as a 1-5 rating would be
    assert scores[0].probs == pytest.approx((scores[0].score, 1 - scores[0].score))
    greedy = reranker.score_pairs(pairs(2), "Location", "greedy", prepared=True)
    assert [g.score for g in greedy] == [float(s.score >= 0.5) for s in scores]


def test_the_concepts_instruction_reaches_the_model(reranker):
    spy = reranker.processor = ProcessorSpy(reranker.processor)
    reranker.score_pairs(pairs(1), "Main Action", prepared=True)
    text = reranker.processor.tokenizer.decode(spy.calls[-1][1]["input_ids"][0])
    instruct = "<Instruct>: Given a query video, retrieve videos that show the same main action as the query video."
    assert SYSTEM in text and instruct + "<Query>:" in text
    query, document = text.split(instruct)[1].split("\n<Document>:")
    assert query.count("<|video_pad|>") and document.count("<|video_pad|>")  # one video on each side
    assert "<0.5 seconds>" in query and "<0.5 seconds>" in document  # each video's own timestamps
    assert text.rstrip().endswith("<|im_start|>assistant")


def test_the_concept_changes_the_score(reranker):
    location = reranker.score_pairs(pairs(2), "Location", prepared=True)
    action = reranker.score_pairs(pairs(2), "Main Action", prepared=True)
    assert [a.score for a in action] != pytest.approx([s.score for s in location], abs=1e-6)


def test_a_batch_scores_as_each_pair_alone(reranker):
    asked = pairs(3)
    batched = reranker.asked_with(batch_size=3).score_pairs(asked, "Location", prepared=True)
    alone = reranker.asked_with(batch_size=1).score_pairs(asked, "Location", prepared=True)
    assert [s.score for s in batched] == pytest.approx([s.score for s in alone], abs=TOLERANCE)
    assert np.ptp([s.score for s in alone]) > 1e-4  # the pairs score differently: equality means something


def test_it_does_not_describe(reranker):
    from rerankers.base import RerankerError

    with pytest.raises(RerankerError, match="scores pairs only"):
        reranker.describe(noise(4, 64, 96, seed=0), "Describe.", 8, prepared=True)
