"""Word endings folded for the keyword index: a query's word and the captions' words meet on one term."""

import pytest

from retrieval.store.keyword.index import terms
from retrieval.store.keyword.stem import stem


@pytest.mark.parametrize("words", [("bicycle", "bicycles"), ("ride", "rides", "riding"), ("walk", "walked", "walks",
                                   "walking"), ("stop", "stopped"), ("run", "running"), ("carry", "carries", "carried"),
                                   ("stretch", "stretches"), ("cross", "crosses", "crossing"), ("city", "cities")])
def test_the_forms_of_a_word_share_one_term(words):
    assert len({stem(w) for w in words}) == 1, {w: stem(w) for w in words}


@pytest.mark.parametrize("word", ["glass", "bus", "sing", "red", "car", "f-16", "3.5", "mp4"])
def test_short_words_names_with_digits_and_non_plurals_stay_as_written(word):
    assert stem(word) == word


def test_index_terms_are_folded_and_drop_stop_words():
    assert terms("The bicycles") == terms("a bicycle") == [stem("bicycle")]
    assert terms("what is she doing there with them") == [stem("doing")]
