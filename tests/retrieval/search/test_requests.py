"""Request values check themselves when made: what needs neither the index nor the files is refused at once."""

import pytest

from rerankers.prompts.diff import DiffInputError
from retrieval.api import CompareRequest, DiffRequest, QueryRequest, SearchRequest
from retrieval.core.concepts import CONVIS_CONCEPTS, Concept, ConceptError
from retrieval.search.compose import Change
from retrieval.search.signals import SignalError


def test_a_query_parses_its_concepts_once_into_a_tuple():
    request = QueryRequest("a.mp4", ["location=3", "main-action=1"])
    assert request.concepts == (Concept("location", "Location", 0.75), Concept("main-action", "Main Action", 0.25))
    given = (Concept("location", "Location", 2.0),)
    assert QueryRequest("a.mp4", given).concepts == given  # parsed concepts keep their weights


def test_a_change_alone_asks_the_five_convis_concepts_and_its_text_becomes_a_change():
    request = QueryRequest("a.mp4", change="  at   night ")
    assert request.change == Change("at night") and [c.key for c in request.concepts] == list(CONVIS_CONCEPTS)


@pytest.mark.parametrize("kwargs, error, match", [
    ({}, ConceptError, "at least one"),
    ({"concepts": ["location"], "change": "at night", "most_different": True}, SignalError, "most-different"),
    ({"concepts": ["location"], "change": "at night", "fusion": "default"}, SignalError, "--change goes with"),
    ({"concepts": ["location"], "signal_overrides": {"location": "vqascore"}, "reranker": "qwen2-vl"}, SignalError,
     "both rescore"),
    ({"concepts": ["location"], "signal_overrides": {"main-action": "vqascore"}}, SignalError, "not a concept"),
    ({"concepts": ["location"], "mode": "loud"}, ValueError, "scoring mode"),
])
def test_a_query_refuses_what_cannot_be_asked(kwargs, error, match):
    with pytest.raises(error, match=match):
        QueryRequest("a.mp4", **kwargs)


def test_a_search_strips_its_text_and_checks_its_concept():
    request = SearchRequest("  a hand   holding a cup ", concept="location")
    assert request.text == "a hand holding a cup" and request.concept_key == "location"
    with pytest.raises(SignalError, match="give a text"):
        SearchRequest("   ")


def test_a_comparison_needs_concepts_and_a_mode():
    assert CompareRequest("a.mp4", "b.mp4", ["location"]).concepts == (Concept("location", "Location", 1.0),)
    with pytest.raises(ConceptError):
        CompareRequest("a.mp4", "b.mp4", [])
    with pytest.raises(ValueError, match="scoring mode"):
        CompareRequest("a.mp4", "b.mp4", ["location"], mode="loud")


@pytest.mark.parametrize("kwargs, match", [
    ({"b": "b.mp4", "action": ""}, "action description"),
    ({"b": "b.mp4", "action": "riding", "fps": 0.0}, "--fps"),
    ({"b": "b.mp4", "action": "riding", "fps": float("nan")}, "--fps"),
    ({"action": "riding"}, "give b or candidates"),
    ({"b": "b.mp4", "candidates": ["c.mp4"], "action": "riding"}, "give b or candidates"),
    ({"b": "b.mp4", "action": "riding", "a_frames": (40, 40)}, "first < stop"),
    ({"b": "b.mp4", "action": "riding", "b_frames": (-1, 9)}, "first < stop"),
    ({"b": "b.mp4", "action": "riding", "a_frames": (0, 9), "a_span": (1.0, None)}, "both a time span and a frame"),
])
def test_a_diff_refuses_what_cannot_be_asked(kwargs, match):
    with pytest.raises(DiffInputError, match=match):
        DiffRequest("a.mp4", **kwargs)


def test_a_diff_names_its_shape():
    assert not DiffRequest("a.mp4", "b.mp4", action=" riding ").ranks
    ranking = DiffRequest("a.mp4", candidates=["b.mp4", "c.mp4"], action="riding")
    assert ranking.ranks and ranking.candidates == ("b.mp4", "c.mp4") and ranking.action == "riding"


def test_a_request_names_the_lmms_it_may_ask_so_their_weights_are_checked_first():
    assert QueryRequest("a.mp4", ["location"], reranker="qwen2-vl").lmms == ("qwen2-vl",)
    vqa = {"location": "vqascore", "main-action": "vqascore:qwen2-vl"}
    assert QueryRequest("a.mp4", ["location", "main-action"], signal_overrides=vqa).lmms == ("llava-onevision",
                                                                                             "qwen2-vl")
    assert QueryRequest("a.mp4", ["location"]).lmms == ()
    assert CompareRequest("a.mp4", "b.mp4", ["location"], "internvl", signal_overrides=vqa).lmms == ("internvl",)
    assert CompareRequest("a.mp4", "b.mp4", ["location"], signal_overrides=vqa).lmms == ("llava-onevision",
                                                                                         "qwen2-vl")
    assert DiffRequest("a.mp4", "b.mp4", action="riding").lmms == ("qwen2.5-vl",)
