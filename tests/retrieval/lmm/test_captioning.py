"""Reading a captioner's answers: clean text, or unreadable with the reason."""

import pytest

from retrieval.lmm.captioning import read_answer


@pytest.mark.parametrize("raw, expected", [
    ("  A man walks.\n", ("A man walks.", "ok", None)),
    ("a\x00b\x1bc", ("abc", "ok", None)),
    ("", (None, "unreadable", "empty answer")),
    (None, (None, "unreadable", "not text: NoneType")),
])
def test_answers_are_read_as_clean_text_or_unreadable(raw, expected):
    a = read_answer(raw)
    assert (a.text, a.status, a.error) == expected
