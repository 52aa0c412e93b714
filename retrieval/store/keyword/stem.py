"""English word endings folded, so that "bicycle" finds "bicycles" and "ride" finds "riding".

The Snowball English stemmer (Porter 2), through PyStemmer: the stemmer bm25s documents for its tokeniser. It maps
a query's word and the captions' words to one term, not to a dictionary word ("city" and "cities" read "citi").
Anything holding a digit is kept as written ("f-16", "3.5", "mp4"): a name, not an English word.
"""

from __future__ import annotations

from functools import lru_cache

import Stemmer

_ENGLISH = Stemmer.Stemmer("english")


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """The term ``word`` (lower case) is indexed and searched as."""
    if not word.isalpha():
        return word
    return _ENGLISH.stemWord(word)
