"""The modification text as TF-CoVR's test set hands it to the text encoder.

``FineGDDataset.__getitem__`` (UCF-CRCV/TF-CoVR, ``src/data/finegd_test.py``) passes each row's ``modification``
through ``replace_numbers_with_text`` (numbers it knows, 0.5 to 7 in halves, become words: "2.5" -> "two and a
half") and then ``pre_caption`` (``src/data/utils.py``: lower case, the characters ``!"()*#:;~`` become spaces,
runs of two or more whitespace characters become one space, the ends trimmed, at most ``max_words`` words; the
dataset's ``max_words`` is 30). Both are reproduced here as the reference writes them.
"""

from __future__ import annotations

import re

MAX_WORDS = 30  # FineGDDataset's max_words (its data module never passes another)

NUM2TEXT = {
    0.5: "half", 1.0: "one", 1.5: "one and a half", 2.0: "two", 2.5: "two and a half", 3.0: "three",
    3.5: "three and a half", 4.0: "four", 4.5: "four and a half", 5.0: "five", 5.5: "five and a half",
    6.0: "six", 6.5: "six and a half", 7.0: "seven",
}
NUMBER = re.compile(r"\b\d+(\.\d+)?\b")  # integers or decimals; others are left as they are


def replace_numbers_with_text(text: str) -> str:
    """Each number ``NUM2TEXT`` maps (compared as a float: "1", "1.0" and "01" are all one) in words."""
    return NUMBER.sub(lambda match: NUM2TEXT.get(float(match.group(0)), match.group(0)), text)


def pre_caption(caption: str, max_words: int = 50) -> str:
    """BLIP's caption cleaning as TF-CoVR's ``pre_caption``: only spaces are trimmed at the ends, and a lone tab or
    newline inside stays."""
    caption = re.sub(r"([!\"()*#:;~])", " ", caption.lower())
    caption = re.sub(r"\s{2,}", " ", caption)
    caption = caption.rstrip("\n").strip(" ")
    words = caption.split(" ")
    return " ".join(words[:max_words]) if len(words) > max_words else caption


def modification_text(modification: str) -> str:
    """A row's modification as the reference encodes it."""
    return pre_caption(replace_numbers_with_text(modification), MAX_WORDS)
