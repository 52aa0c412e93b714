"""Reading a captioner's answers: clean text, or unreadable with the reason."""

import pytest

from retrieval.lmm.captioning import MAX_CHARS, answer_limit, read_answer


@pytest.mark.parametrize("raw, expected", [
    ("  A man walks.\n", ("A man walks.", "ok", None)),
    ("a\x00b\x1bc", ("abc", "ok", None)),
    ("", (None, "unreadable", "empty answer")),
    (None, (None, "unreadable", "not text: NoneType")),
])
def test_answers_are_read_as_clean_text_or_unreadable(raw, expected):
    a = read_answer(raw)
    assert (a.text, a.status, a.error) == expected


def test_a_caption_as_long_as_its_budget_allows_is_kept():
    """The reference's Qwen captions took up to 1024 new tokens and run to 4,958 characters (a model looping on,
    kept as it was written); a fast caption of 256 tokens past 2,000 characters is still a model running on."""
    looping = "The camera then cuts to a shot of a race car being pushed off the track by a tow truck. " * 56
    assert 4900 < len(looping) < 5000
    assert read_answer(looping, answer_limit(1024)).status == "ok"
    assert answer_limit(256) == MAX_CHARS
    too_long = read_answer(looping, answer_limit(256))
    assert (too_long.status, too_long.error) == ("unreadable", f"{len(looping.strip())} characters, more than 2000")
