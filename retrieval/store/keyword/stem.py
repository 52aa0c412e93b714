"""English word endings folded, so that "bicycle" finds "bicycles" and "ride" finds "riding".

A light suffix stemmer in the manner of Porter's first steps, small enough to keep here rather than add a compiled
dependency (PyStemmer): plural and verb endings (-s, -es, -ies, -ed, -ing), -ly, a doubled final consonant
("stopped", "running") and a final -e ("ride", "rides", "riding" all read "rid"). It only has to map a query's word
and the captions' words to the same term, not to a dictionary word. Words shorter than four letters, and anything
holding a digit, are kept as written ("f-16", "ps", "3.5").
"""

from __future__ import annotations

from functools import lru_cache

_VOWELS = frozenset("aeiouy")
_KEEP_ENDINGS = ("ss", "us", "is")  # "glass", "bus", "axis" are not plurals


def _has_vowel(stem: str) -> bool:
    return any(c in _VOWELS for c in stem)


def _strip_plural(word: str) -> str:
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith("s") and not word.endswith(_KEEP_ENDINGS):
        return word[:-1]
    return word


def _strip_suffix(word: str) -> str:
    """-ing, -ed or -ly off when a syllable is left ("sing" and "red" stay)."""
    for suffix in ("ing", "ed", "ly"):
        stem = word[:-len(suffix)]
        if word.endswith(suffix) and len(stem) >= 3 and _has_vowel(stem):
            if stem[-1] == stem[-2] and stem[-1] not in "lsz":  # "stopp" -> "stop", "runn" -> "run"
                stem = stem[:-1]
            return stem
    return word


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """The term ``word`` (lower case) is indexed and searched as."""
    if len(word) < 4 or not word.isalpha():
        return word
    out = _strip_suffix(_strip_plural(word))
    if out.endswith("y") and len(out) > 3 and out[-2] not in _VOWELS:
        out = out[:-1] + "i"  # "carry", "carries", "carried" alike
    if out.endswith("e") and len(out) > 3:
        out = out[:-1]
    return out
