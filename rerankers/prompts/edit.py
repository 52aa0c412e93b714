"""What an LMM is asked when a composed query's change edits the anchor's caption or a concept's description.

The training-free composed-retrieval methods (CIReVL, CoVRAGE) describe the reference, have a language model
edit the description as the modification says, and retrieve with the edited text.  convis already holds the
anchor's description (its caption, its per-concept descriptions), so the request is text only: the description
and the change in, the edited description out.  Not a reference's words (ConViS asks no such thing): written in
the style of the project's other requests, and asked in the family's own chat with its default system message
(``Reranker.answer_text``), greedily.

The answer is read leniently (a label such as "Edited description:" and surrounding quotes are dropped) and
refused when it cannot be the edited text: empty, mostly not words, or far longer than the text and the change
together (a model that keeps talking).
"""

from __future__ import annotations

import re

# Bump whenever the request, the reading of the answer or the token budget changes: it is part of every cached
# edit's key, so an old answer is never read as the new version's.
EDIT_PROMPT_VERSION = "edit.1"

EDIT_REQUEST_TEMPLATE = (
    "You are an AI designed to edit the description of a video as a requested change says.\n\n"
    "The description is: '{text}'.\n"
    "The change is: '{change}'.\n"
    "Your task is to rewrite the description so that it describes the video changed in this way: put what the "
    "change asks for in place of what it replaces, and keep everything else as it is.\n"
    "Output only the edited description, in the same style and about the same length.\n"
    "Do not explain your reasoning.\n"
)

# New tokens an answer may take: a caption is at most 256 (rerankers.prompts.describe), the change adds a few.
EDIT_TOKENS = 320
LONGEST = 2.0  # an answer longer than this many times the text and the change together is a model that kept talking
MIN_LETTERS = 0.5  # the share of an answer's characters that must be letters or spaces

_LABEL = re.compile(r"^\s*(?:the\s+)?(?:edited|new|rewritten|changed)(?:\s+description)?\s*:\s*", re.I)
_QUOTES = "'\"`“”‘’"


def edit_request(text: str, change: str) -> str:
    """The request that asks for ``text`` edited as ``change`` says (both stripped; neither may be empty)."""
    text, change = " ".join(str(text).split()), " ".join(str(change).split())
    if not text or not change:
        raise ValueError("an edit needs a text and a change")
    return EDIT_REQUEST_TEMPLATE.format(text=text, change=change)


def read_edit(answer: str, text: str, change: str) -> tuple[str | None, str]:
    """(the edited text the answer gives, "") or (None, why it cannot be read as one)."""
    said = " ".join(str(answer).split())
    said = _LABEL.sub("", said).strip().strip(_QUOTES).strip()
    if not said:
        return None, "empty"
    if len(said) > LONGEST * (len(text) + len(change)):
        return None, f"too long ({len(said)} characters for a {len(text)}-character text)"
    if sum(c.isalpha() or c.isspace() for c in said) < MIN_LETTERS * len(said):
        return None, "not words"
    return said, ""
