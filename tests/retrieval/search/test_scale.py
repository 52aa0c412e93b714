"""Every score and total on one 0-1 scale: LMM answers (1-5) are mapped before Eq. 2, and kept as ratings."""

import pytest

from rerankers.base import PairScore
from retrieval.core.concepts import parse_concepts
from retrieval.search.ranking import ranked
from retrieval.search.results import Answerer, CompareResult, Hit

CONCEPTS = parse_concepts(["location=0.75", "main-action=0.25"])


def _hit(path: str, scores: dict, total: float) -> Hit:
    return Hit(1, path, 0, 0.0, 1.0, scores, total)


def test_reranked_hits_score_the_lmm_answers_on_the_zero_to_one_scale():
    recalled = _hit("a.mp4", {"location": 0.9, "main-action": 0.7}, 0.85)
    answers = {"location": PairScore(4.2, "expected", "4"), "main-action": PairScore(2.0, "expected", "2")}
    hit = recalled.reranked(answers, CONCEPTS)
    assert hit.scores == pytest.approx({"location": 0.8, "main-action": 0.25})
    assert hit.ratings == {"location": 4.2, "main-action": 2.0}
    assert hit.total == pytest.approx(0.75 * 0.8 + 0.25 * 0.25)
    assert hit.recall_scores == {"location": 0.9, "main-action": 0.7} and hit.recall_total == 0.85
    assert hit.as_dict()["ratings"] == {"location": 4.2, "main-action": 2.0}


def test_a_comparison_by_an_lmm_keeps_its_answer_beside_the_zero_to_one_score():
    answers = {"location": PairScore(4.2, "expected", "4"), "main-action": PairScore(None, "expected", "?")}
    result = CompareResult.answered("a.mp4", "b.mp4", Answerer("tiny", "expected", False), CONCEPTS, answers, 1, ())
    location, action = result.as_dict()["concepts"]
    assert (location["score"], location["rating"]) == (0.8, 4.2)
    assert (action["score"], action["rating"]) == (None, None) and result.total is None


def test_equal_totals_are_ordered_by_the_total_before_reranking_or_fusion():
    low, high = (_hit(p, {"location": 0.5, "main-action": 0.5}, t) for p, t in (("a.mp4", 0.60), ("b.mp4", 0.70)))
    answers = {"location": PairScore(3.0, "expected", "3"), "main-action": PairScore(3.0, "expected", "3")}
    hits = ranked([low.reranked(answers, CONCEPTS), high.reranked(answers, CONCEPTS)])
    assert [h.path for h in hits] == ["b.mp4", "a.mp4"]  # not by path: b was the closer match before reranking
