"""Concept weights (paper Eq. 2): normalised to sum 1 at any magnitude; only positive finite weights are taken."""

import pytest

from retrieval.core.concepts import ConceptError, combine, parse_concepts

SCORES = {"location": 0.8, "main-action": 0.3}


@pytest.mark.parametrize("huge", ["1e308", "1.7976931348623157e308"])
def test_huge_equal_weights_are_halves_and_rank_as_equal_weights(huge):
    concepts = parse_concepts([f"location={huge}", f"main-action={huge}"])
    assert [c.weight for c in concepts] == [0.5, 0.5]
    assert combine(SCORES, concepts) == combine(SCORES, parse_concepts(["location=1", "main-action=1"])) == 0.55


@pytest.mark.parametrize("a, b", [("3e307", "1e307"), ("3e-320", "1e-320"), ("3", "1")])
def test_weight_proportions_hold_at_any_magnitude(a, b):
    weights = [c.weight for c in parse_concepts([f"location={a}", f"main-action={b}"])]
    assert weights == pytest.approx([0.75, 0.25], rel=1e-3) and sum(weights) == pytest.approx(1.0)


@pytest.mark.parametrize("spec", ["location=0", "location=-0", "location=inf", "location=1e309", "location=-inf"])
def test_zero_and_non_finite_weights_are_refused_in_one_line(spec):
    with pytest.raises(ConceptError, match="must be a finite number > 0") as caught:
        parse_concepts([spec, "main-action=1"])
    assert "\n" not in str(caught.value)
