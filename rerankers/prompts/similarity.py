"""What the LMM is asked, per model family, and how its answer is read.

The wording is the ConViS-Bench reference's (``baselines/compute_conditioned_similarities.py``,
``models/*_model.py`` of benedettaliberatori/convisbench).  Where the reference puts each piece
differs by family, and that placement is kept, because it changes the scores:

* Qwen2-VL / Qwen2.5-VL: the concept prompt is the *system* message; the user turn is
  "Output a similarity score from 1 to 5." followed by the video.
* LLaVA-OneVision / LLaVA-Video: the llava ``qwen_1_5`` conversation keeps its default system
  message ("You are a helpful assistant."); the user turn is the video then the concept prompt.
* InternVL: ``model.chat`` keeps InternVL's own system message; the user turn is the concept
  prompt, a newline, one ``FrameN: <image>`` line per frame, then "Output a similarity score
  from 1 to 5."

Every layout returns a chat in the transformers multimodal format (a list of
``{"role", "content"}`` dicts) with exactly one ``{"type": "video"}`` entry; the model's own chat
template turns it into text and its processor expands the video placeholder.
"""

from __future__ import annotations

import math
import re
from typing import Callable

# Bump whenever any text below or a family's layout changes: it is part of every score cache key.
PROMPT_VERSION = "convisbench-b8fa4ef.1"

# Word for word as the reference, including the trailing newline.
SYSTEM_PROMPT_TEMPLATE = (
    "You are an AI designed to compare two videos based on the visual concept of '{concept_name}'.\n\n"
    "The input consists of a sequence of concatenated frames: the first half represents Video 1, "
    "and the second half represents Video 2.\n"
    "Your task is to evaluate how similar these two videos are with respect to the concept '{concept_name}'.\n"
    "Output a single similarity score between 1 and 5, where 1 means completely different and 5 means "
    "perfectly similar in terms of '{concept_name}'.\n"
    "Do not explain your reasoning. Only output the numerical score.\n"
)

# A composed query's question (not the reference's: ConViS asks no such thing), written in its style and placed
# where each family places the concept prompt: video 1 is the anchor, video 2 the candidate.
CHANGE_PROMPT_TEMPLATE = (
    "You are an AI designed to compare two videos: whether the second shows the first changed in a given way.\n\n"
    "The input consists of a sequence of concatenated frames: the first half represents Video 1, "
    "and the second half represents Video 2.\n"
    "Video 1 is the reference. The change is: '{change}'.\n"
    "Your task is to evaluate how well Video 2 shows Video 1 changed in this way.\n"
    "Output a single score between 1 and 5, where 1 means Video 2 does not show Video 1 changed in this way at all "
    "and 5 means Video 2 shows exactly Video 1 changed in this way.\n"
    "Do not explain your reasoning. Only output the numerical score.\n"
)
CHANGE_PROMPT_VERSION = "change.1"  # bump with the text above: it is in every cached composition score's key

SCORE_REQUEST = "Output a similarity score from 1 to 5."

# Default system messages of the reference's chat paths (llava conv "qwen_1_5"; InternVL "internvl2_5").
LLAVA_SYSTEM_MESSAGE = "You are a helpful assistant."
INTERNVL_SYSTEM_MESSAGE = (
    "你是书生·万象，英文名是InternVL，是由上海人工智能实验室、清华大学及多家合作单位联合开发的多模态大语言模型。"
)

# The answers the expected-score mode reads the next-token distribution of, in score order.
ANSWER_TOKENS: tuple[str, ...] = ("1", "2", "3", "4", "5")


class ChangeWords(str):
    """What a composed query asks in place of a concept: its change text, as a string that names it in the score
    cache ("change.1: <text>", with the question's version) and makes ``system_prompt`` ask the composition
    question instead."""

    change: str

    def __new__(cls, change: str) -> "ChangeWords":
        text = " ".join(str(change).split())
        if not text:
            raise ValueError("the change text is empty")
        made = super().__new__(cls, f"{CHANGE_PROMPT_VERSION}: {text}")
        made.change = text
        return made


def system_prompt(concept_words: str) -> str:
    """The reference's concept prompt; ``concept_words`` as written, e.g. "Main Action" (a ``ChangeWords``:
    the composition question)."""
    if isinstance(concept_words, ChangeWords):
        return CHANGE_PROMPT_TEMPLATE.format(change=concept_words.change)
    words = " ".join(str(concept_words).split())
    if not words:
        raise ValueError("concept_words is empty")
    return SYSTEM_PROMPT_TEMPLATE.format(concept_name=words)


def _text(text: str) -> dict:
    return {"type": "text", "text": text}


_VIDEO = {"type": "video"}


def qwen_chat(concept_words: str) -> list[dict]:
    return [
        {"role": "system", "content": system_prompt(concept_words)},
        {"role": "user", "content": [_text(SCORE_REQUEST), dict(_VIDEO)]},
    ]


def llava_chat(concept_words: str) -> list[dict]:
    # content as lists: the llava-onevision template iterates content entries by type
    return [
        {"role": "system", "content": [_text(LLAVA_SYSTEM_MESSAGE)]},
        {"role": "user", "content": [dict(_VIDEO), _text(system_prompt(concept_words))]},
    ]


def internvl_chat(concept_words: str) -> list[dict]:
    # the template renders the video as "<video>\n"; the processor expands it to
    # "Frame1: <img>...</img>\n...FrameN: <img>...</img>", the reference's per-frame prefix
    return [
        {"role": "system", "content": [_text(INTERNVL_SYSTEM_MESSAGE)]},
        {
            "role": "user",
            "content": [_text(system_prompt(concept_words) + "\n"), dict(_VIDEO), _text(SCORE_REQUEST)],
        },
    ]


CHAT_LAYOUTS: dict[str, Callable[[str], list[dict]]] = {
    "qwen": qwen_chat,
    "llava": llava_chat,
    "internvl": internvl_chat,
}


def build_chat(layout: str, concept_words: str) -> list[dict]:
    try:
        return CHAT_LAYOUTS[layout](concept_words)
    except KeyError:
        raise ValueError(f"unknown chat layout {layout!r}; known: {', '.join(CHAT_LAYOUTS)}") from None


_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


def parse_score(answer: str | None) -> int | None:
    """Read a greedy answer as a score 1..5, or None when it cannot be read.

    Rules (the reference reads ``float(answer)`` and writes 0.0 when that fails; here an
    unreadable answer is None, never a number):

    1. surrounding whitespace is stripped;
    2. the *first* number in the text decides (``"4"``, ``"Score: 4"``, ``"4/5"``, ``"4."`` -> 4);
    3. that number must be an integer from 1 to 5 (``"4.0"`` counts as 4); anything else, such as
       ``"0"``, ``"6"``, ``"10"``, ``"-3"``, ``"3.5"``, or text with no number at all, gives None.
    """
    if not answer:
        return None
    match = _NUMBER.search(answer.strip())
    if match is None:
        return None
    value = float(match.group())
    if value.is_integer() and 1 <= value <= 5:
        return int(value)
    return None


def reference_score(answer: str | None) -> float:
    """Read a greedy answer as the ConViS-Bench reference does: its model files' ``generate`` strips the decoded
    answer (``models/qwen2_vl_model.py``, ``llavaov_model.py``, ``mplugowl3_model.py``: ``text.strip()``;
    InternVL's ``chat`` strips its response), then ``parse_answer_to_score`` reads ``answer.split("\n")[0]``: the
    number that first line is, whatever it is ("7" -> 7.0, "\n7" -> 7.0), else 0.0, the release's "could not
    parse".  Only the reference's own score files are written with it; everywhere else an answer is
    read with ``parse_score`` (1-5 or unreadable).  A line reading "nan" or "inf" (a number to Python, though no
    score) is 0.0 too: the score files are JSON.
    """
    line = (answer or "").strip().split("\n")[0]
    try:
        value = float(line)
    except ValueError:
        return 0.0
    return value if math.isfinite(value) else 0.0
