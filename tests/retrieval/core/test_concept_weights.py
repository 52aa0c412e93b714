"""Concept weights (paper Eq. 2): from 0.001 to 1000, normalised to sum 1 (the normalisation holds at any magnitude)."""

import pytest

from retrieval.core.concepts import ConceptError, combine, normalise, parse_concepts

SCORES = {"location": 0.8, "main-action": 0.3}


@pytest.mark.parametrize("huge", [1e308, 1.7976931348623157e308])
def test_huge_equal_weights_normalise_to_halves(huge):
    assert normalise([huge, huge]) == [0.5, 0.5]


@pytest.mark.parametrize("a, b", [(3e307, 1e307), (3e-320, 1e-320), (3, 1)])
def test_weight_proportions_hold_at_any_magnitude(a, b):
    weights = normalise([a, b])
    assert weights == pytest.approx([0.75, 0.25], rel=1e-3) and sum(weights) == pytest.approx(1.0)


@pytest.mark.parametrize("low, high", [("0.001", "1000"), ("3", "1")])
def test_weights_in_range_combine_in_proportion(low, high):
    concepts = parse_concepts([f"location={low}", f"main-action={high}"])
    ratio = float(high) / float(low)
    assert [c.weight for c in concepts] == pytest.approx([1 / (1 + ratio), ratio / (1 + ratio)])
    assert combine(SCORES, concepts) == pytest.approx((0.8 + ratio * 0.3) / (1 + ratio))


@pytest.mark.parametrize("spec", ["location=0", "location=-0", "location=inf", "location=1e309", "location=-inf",
                                  "location=nan", "location=1e308", "location=1e-320", "location=0.0009",
                                  "location=1000.5"])
def test_weights_out_of_range_are_refused_in_one_line(spec):
    with pytest.raises(ConceptError, match="concept weight must be a number from 0.001 to 1000") as caught:
        parse_concepts([spec, "main-action=1"])
    assert "\n" not in str(caught.value)
