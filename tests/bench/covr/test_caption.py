"""The modification text is cleaned as TF-CoVR's test set cleans it before encoding (``replace_numbers_with_text``
then ``pre_caption`` with 30 words, ``src/data/finegd_test.py`` and ``src/data/utils.py``); the expected strings are
worked out by hand from the reference's rules."""

import pytest

from bench.covr.caption import modification_text, pre_caption, replace_numbers_with_text


@pytest.mark.parametrize("text, expected", [
    ("2.5 somersaults instead of 1.5", "two and a half somersaults instead of one and a half"),
    ("0.5 twist, then 7 and 7.0 and 01", "half twist, then seven and seven and one"),  # compared as floats
    ("8 twists, 3.25 turns, 10 steps", "8 twists, 3.25 turns, 10 steps"),  # not in the table: left alone
    ("v2 and 2x and 4.5.", "v2 and 2x and four and a half."),  # a number must stand as a word
    ("1.5.2", "one and a half.two"),  # "1.5", then "2" after the dot
])
def test_numbers_become_words_as_the_reference_maps_them(text, expected):
    assert replace_numbers_with_text(text) == expected


@pytest.mark.parametrize("text, expected", [
    ("The Diver: (Forward) Pike!", "the diver forward pike"),  # !"()*#:;~ become spaces, runs of them one
    ("a.b, c-d 'e'", "a.b, c-d 'e'"),  # the rest stays
    ("  tuck*#~ position \n\n", "tuck position"),
    ("one\ttwo", "one\ttwo"),  # a lone tab is not a run of two
    ("\nfirst", "\nfirst"),  # only spaces are trimmed at the start
])
def test_pre_caption_cleans_as_blip_does(text, expected):
    assert pre_caption(text) == expected


def test_the_modification_is_cut_to_thirty_words_after_numbers_become_words():
    text = "Make it 2.5 somersaults " + " ".join(f"w{i}" for i in range(40))
    words = modification_text(text).split(" ")
    assert words[:6] == ["make", "it", "two", "and", "a", "half"]  # three words more, before the cut
    assert len(words) == 30 and words[-1] == "w22"
