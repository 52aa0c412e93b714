"""Qwen3-VL-Reranker's prompt: a (query, document) pair judged under an instruction, read as P(yes).

From QwenLM/Qwen3-VL-Embedding (src/models/qwen3_vl_reranker.py, ``format_mm_instruction``, and
examples/reranker_template.jinja): the system message below; one user turn of ``<Instruct>: `` + the instruction,
``<Query>:`` + the query's content, ``\\n<Document>:`` + the document's content (each's videos before its text);
the score is sigmoid(logit("yes") - logit("no")) at the last position of the assistant's turn.

For convis the query is the anchor video and the document a candidate video; the instruction names the concept.
"""

from __future__ import annotations

# Bump whenever the system message, the instruction or the layout changes: it keys every cached score.
YESNO_PROMPT_VERSION = "qwen3-vl-reranker.1"

SYSTEM = ('Judge whether the Document meets the requirements based on the Query and the Instruct provided. '
          'Note that the answer can only be "yes" or "no".')
INSTRUCTION = "Given a query video, retrieve videos that show the same {concept} as the query video."
YES_WORD, NO_WORD = "yes", "no"  # the two answer tokens the score compares


def instruction(concept_words: str) -> str:
    """The instruction for a concept ("Main Action" -> "... show the same main action as the query video.")."""
    words = " ".join(str(concept_words).split())
    if not words:
        raise ValueError("a concept is empty")
    return INSTRUCTION.format(concept=words.lower())


def pair_chat(concept_words: str) -> list[dict]:
    """The chat of one (anchor, candidate) pair: the anchor as the query's video, the candidate as the document's."""
    return [
        {"role": "system", "content": [{"type": "text", "text": SYSTEM}]},
        {"role": "user", "content": [
            {"type": "text", "text": "<Instruct>: " + instruction(concept_words)},
            {"type": "text", "text": "<Query>:"}, {"type": "video"},
            {"type": "text", "text": "\n<Document>:"}, {"type": "video"},
        ]},
    ]
