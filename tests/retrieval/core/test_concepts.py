import pytest

from retrieval.core.concepts import ConceptError, combine, parse_concept, parse_concepts
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
