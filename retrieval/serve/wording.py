"""The server's words for what lower layers word for the command line: a request option by its field name
(``where``, not ``--where``), and what only the command line or the server's own start can set said so, not as a
flag a web user cannot pass."""

from __future__ import annotations

import re

# a request option as the CLI spells it: HTTP names it as the API's field
CLI_OPTION = re.compile(r"(?<![\w-])--(where|concept|mode|rerank-top|free-text|change-weight|most-different|k)\b")
# what a request cannot set: the server's reranker (a request asks it with `rerank`), a per-concept signal
RERANKER = re.compile(r"\(--reranker\)|(?<!serve )--reranker\b")  # not `convis serve --reranker`, the remedy
SIGNAL = re.compile(r"\(?--signal ([^\s)]+)\)?")


def http_words(message: str) -> str:
    """``message`` (an error or a note) in the server's words: request fields by their names; a reranker as the
    Rerank option; a per-concept signal as what the command line sets."""
    message = CLI_OPTION.sub(lambda m: m.group(1).replace("-", "_"), message)
    message = RERANKER.sub("(Rerank, with a server started with a reranker)", message)
    return SIGNAL.sub(lambda m: f"(from the command line: convis query --signal {m.group(1)})", message)
