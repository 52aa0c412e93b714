"""Which signal scores which concept, and what the user is told when signals cannot tell concepts apart."""

import pytest

from retrieval.core.concepts import parse_concepts
from retrieval.search.signals import SignalError, choose_all, scoring_notices

INDEXED = {"efficientnet-lite0": "efficientnet-lite0:package:weights", "text": "text:minilm"}


def test_concepts_sharing_a_signal_are_named_with_the_signal_and_what_would_separate_them():
    concepts = parse_concepts(["main-action=0.6", "main-objects=0.4", "location"])
    chosen = choose_all(concepts, INDEXED)
    assert chosen == {"main-action": "text:minilm", "main-objects": "text:minilm",
                      "location": "efficientnet-lite0:package:weights"}
    assert scoring_notices(concepts, chosen, INDEXED) == [
        "main-action and main-objects both use the caption similarity (text), so their scores are identical: "
        "without a reranker they cannot be told apart; rerank with an LMM (--reranker), or give one of them "
        "another signal (--signal main-objects=efficientnet-lite0)"]


def test_concepts_on_signals_of_their_own_need_no_notice():
    concepts = parse_concepts(["main-action", "location"])
    # the other concepts have descriptions of their own: nothing else is scored as main-action is
    described = {c: f"text:minilm#{c}" for c in ("main-subjects", "main-objects", "order-of-actions")}
    assert scoring_notices(concepts, choose_all(concepts, INDEXED), INDEXED, described=described) == []


def test_with_one_signal_only_the_reranker_is_suggested():
    only = {"efficientnet-lite0": "efficientnet-lite0:weights"}
    concepts = parse_concepts(["location", "main-action", "main-objects"])
    [notice] = scoring_notices(concepts, choose_all(concepts, only), only)
    assert notice.startswith("location, main-action and main-objects all use the whole-clip similarity of "
                             "efficientnet-lite0")
    assert "--reranker" in notice and "--signal" not in notice


def test_free_text_says_which_signal_scores_it_and_which_convis_concept_uses_the_same():
    concepts = parse_concepts(["camera angle"])
    [notice] = scoring_notices(concepts, choose_all(concepts, INDEXED), INDEXED)
    assert notice == ("'camera angle' is free text: no indexed signal measures it, so it is scored by the "
                      "whole-clip similarity of efficientnet-lite0, as location is by default; rerank with an "
                      "LMM (--reranker) to ask about 'camera angle' itself")


def test_an_override_for_a_concept_the_query_lacks_is_an_error():
    concepts = parse_concepts(["location"])
    assert choose_all(concepts, INDEXED, {"location": "text"}) == {"location": "text:minilm"}
    with pytest.raises(SignalError, match="--signal main-action: not a concept of this query"):
        choose_all(concepts, INDEXED, {"main-action": "text"})


def test_one_concept_alone_on_a_signal_other_concepts_share_is_told_they_would_rank_the_same():
    concepts = parse_concepts(["main-subjects"])
    [notice] = scoring_notices(concepts, choose_all(concepts, INDEXED), INDEXED,
                               described={"location": "text:minilm#location", "main-action": "text:minilm#main-action"})
    assert notice.startswith("main-subjects, main-objects and order-of-actions would rank the same here: all are "
                             "scored by the caption similarity (text), which does not tell them apart")
    described = {c: f"text:minilm#{c}" for c in ("location", "main-action", "main-objects", "order-of-actions")}
    assert scoring_notices(concepts, choose_all(concepts, INDEXED), INDEXED, described=described) == []
