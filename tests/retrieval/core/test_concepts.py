import pytest

from retrieval.core.concepts import CloseToConcept, ConceptError, combine, from_rating, parse_concept, parse_concepts
from retrieval.search.signals import SignalError, choose, parse_overrides


@pytest.mark.parametrize("spec, key, words", [
    ("location", "location", "Location"),
    ("main-action", "main-action", "Main Action"),
    ("MainAction", "main-action", "Main Action"),
    ("Order_Of_Actions", "order-of-actions", "Order Of Actions"),
    ("camera angle", "camera-angle", "camera angle"),
])
def test_aliases_and_free_text(spec, key, words):
    c = parse_concept(spec)
    assert (c.key, c.words, c.weight) == (key, words, 1.0)


def test_weights_are_normalised_and_combined_as_eq2():
    concepts = parse_concepts(["location=0.7", "main-action=0.3", "weather=1"])
    assert [round(c.weight, 6) for c in concepts] == [0.35, 0.15, 0.5]
    scores = {"location": 0.8, "main-action": 0.2, "weather": 0.6}
    assert combine(scores, concepts) == pytest.approx(0.35 * 0.8 + 0.15 * 0.2 + 0.5 * 0.6)


@pytest.mark.parametrize("specs", [["location=abc"], ["location=-1"], ["location=nan"], [],
                                   ["location", "Location"], ["location=0"], ["=2"]])
def test_malformed_concepts_are_errors(specs):
    with pytest.raises(ConceptError):
        parse_concepts(specs)


def test_signal_table_prefers_the_papers_best_signal():
    available = {"dinov2": "dinov2:x", "text": "text:y", "efficientnet-lite0": "e:z"}
    assert choose("location", available) == "dinov2:x"
    assert choose("main-action", available) == "text:y"
    assert choose("camera-angle", {"efficientnet-lite0": "e:z"}) == "e:z"
    assert choose("location", available, parse_overrides(["Location=text"])) == "text:y"
    with pytest.raises(SignalError, match="not in this index"):
        choose("location", available, {"location": "clip"})
    with pytest.raises(SignalError):
        parse_overrides(["location"])


@pytest.mark.parametrize("spec, match", [
    ("locaton", "location"), ("lcoation", "location"), ("main subject", "main-subjects"),
    ("Main-Objcts", "main-objects"), ("order of action", "order-of-actions"),
])
def test_a_name_close_to_a_convis_concept_is_refused_as_a_typo(spec, match):
    with pytest.raises(CloseToConcept) as caught:
        parse_concepts([spec])
    assert caught.value.match == match
    assert str(caught.value) == (f"unknown concept {spec!r}; did you mean {match}? "
                                 "(use --free-text to ask for it as written)")


@pytest.mark.parametrize("spec, key", [
    ("camera angle", "camera-angle"), ("weather", "weather"), ("motion", "motion"), ("lighting", "lighting"),
])
def test_other_names_are_free_text_without_asking(spec, key):
    assert parse_concept(spec).key == key


def test_free_text_takes_a_close_name_as_written_and_spellings_of_convis_names_still_match():
    assert parse_concept("locaton", free_text=True) == parse_concept("locaton=1", free_text=True)
    assert (parse_concept("locaton", free_text=True).key, parse_concept("locaton", free_text=True).words) == \
        ("locaton", "locaton")
    for spelling in ("LOCATION", "Main_Action", "main action", "MainObjects", "order of actions"):
        assert parse_concept(spelling).key in {"location", "main-action", "main-objects", "order-of-actions"}
        assert parse_concept(spelling, free_text=True) == parse_concept(spelling)  # still the ConViS concept
    with pytest.raises(CloseToConcept):
        parse_overrides(["locaton=clip"])
    assert parse_overrides(["locaton=clip"], free_text=True) == {"locaton": "clip"}


def test_one_to_five_ratings_map_onto_the_zero_to_one_scale():
    assert [from_rating(r) for r in (1.0, 2.0, 3.0, 4.2, 5.0)] == pytest.approx([0.0, 0.25, 0.5, 0.8, 1.0])
    assert from_rating(None) is None  # an unreadable answer stays unreadable
