"""What a video LMM is asked when it describes one clip at index time.

One caption, in the ConViS-Bench reference's words ("Describe this video in detail.", the request
its caption files were written with), and one short description per ConViS concept, each prompt
asking only about that concept, so every concept's text can be searched on its own.

Every request goes in the family's own chat, as reranking does, but with a single video and the
request after it:

* Qwen2-VL / Qwen2.5-VL: the template's default system message; the user turn is the video then the request.
* LLaVA-OneVision / LLaVA-Video: the ``qwen_1_5`` default system message; the video then the request.
* InternVL: InternVL's own system message; the processor expands the video into one
  ``FrameK: <image>`` line per frame (the reference's per-frame prefix), then the request.
"""

from __future__ import annotations

from typing import Callable

from rerankers.prompts.similarity import INTERNVL_SYSTEM_MESSAGE, LLAVA_SYSTEM_MESSAGE
from retrieval.core.concepts import CONVIS_CONCEPTS
from retrieval.core.signal_kinds import CAPTION  # the key the whole-clip caption is stored under

# Bump whenever a request, a chat layout or a token budget below changes: it is part of every description's
# cache key, so a new version describes every unit again and an old one is never read as the new one's.
DESCRIBE_PROMPT_VERSION = "describe.1"

CAPTION_REQUEST = "Describe this video in detail."

# One request per ConViS concept, keyed as retrieval.core.concepts keys them.
CONCEPT_REQUESTS: dict[str, str] = {
    "location": "Describe only the location of this video: the place and setting. Answer in one short sentence.",
    "main-action": "Describe only the main action in this video. Answer in one short sentence.",
    "main-subjects": ("Describe only the main subjects of this video: their number, age and gender. "
                      "Answer in one short sentence."),
    "main-objects": "Describe only the main objects in this video. Answer in one short sentence.",
    "order-of-actions": ("Describe only the order of actions in this video: the sequence of actions, "
                         "first to last. Answer in one short sentence."),
}
assert set(CONCEPT_REQUESTS) == set(CONVIS_CONCEPTS), "a request per ConViS concept, under its key"

# New tokens each answer may take: a detailed caption needs room, a concept's one sentence little.
CAPTION_TOKENS = 256
CONCEPT_TOKENS = 64


def describe_requests(caption_tokens: int | None = None) -> dict[str, tuple[str, int]]:
    """Every request of one unit, in the order they are asked: key -> (request, max new tokens).
    ``caption_tokens``: the caption's budget when the captioner has its own (the paper protocol's)."""
    return {**caption_requests(caption_tokens),
            **{key: (text, CONCEPT_TOKENS) for key, text in CONCEPT_REQUESTS.items()}}


def caption_requests(caption_tokens: int | None = None) -> dict[str, tuple[str, int]]:
    """The caption request alone: what the ConViS-Bench reference asked its captioners."""
    return {CAPTION: (CAPTION_REQUEST, caption_tokens or CAPTION_TOKENS)}


DESCRIBE_KEYS: tuple[str, ...] = tuple(describe_requests())

# A concept of the user's own ("camera angle") is asked about in the words of the ConViS requests.
FREE_REQUEST = "Describe only the {words} in this video. Answer in one short sentence."


def concept_request(key: str, words: str) -> str:
    """The request about one concept: a ConViS concept's own, else ``FREE_REQUEST`` with the user's words."""
    return CONCEPT_REQUESTS.get(key) or FREE_REQUEST.format(words=" ".join(str(words).split()))


def concept_requests(concepts: dict[str, str]) -> dict[str, tuple[str, int]]:
    """The requests about ``concepts`` (key -> words), in order: key -> (request, max new tokens)."""
    return {key: (concept_request(key, words), CONCEPT_TOKENS) for key, words in concepts.items()}


def _text(text: str) -> dict:
    return {"type": "text", "text": text}


def qwen_describe(request: str) -> list[dict]:
    # no system message: Qwen's template writes its default one ("You are a helpful assistant.")
    return [{"role": "user", "content": [{"type": "video"}, _text(request)]}]


def llava_describe(request: str) -> list[dict]:
    return [
        {"role": "system", "content": [_text(LLAVA_SYSTEM_MESSAGE)]},
        {"role": "user", "content": [{"type": "video"}, _text(request)]},
    ]


def internvl_describe(request: str) -> list[dict]:
    # the template renders the video as "<video>\n", which the processor expands to the FrameK lines
    return [
        {"role": "system", "content": [_text(INTERNVL_SYSTEM_MESSAGE)]},
        {"role": "user", "content": [{"type": "video"}, _text(request)]},
    ]


DESCRIBE_LAYOUTS: dict[str, Callable[[str], list[dict]]] = {
    "qwen": qwen_describe,
    "llava": llava_describe,
    "internvl": internvl_describe,
}


def text_chat(request: str) -> list[dict]:
    """A question with no video, in any family's chat (its template adds its default system message)."""
    if not str(request).strip():
        raise ValueError("the question is empty")
    return [{"role": "user", "content": [_text(str(request))]}]


def describe_chat(layout: str, request: str) -> list[dict]:
    """The chat asking ``request`` about one video, in the family's ``layout``."""
    if not str(request).strip():
        raise ValueError("the request is empty")
    try:
        return DESCRIBE_LAYOUTS[layout](request)
    except KeyError:
        raise ValueError(f"unknown chat layout {layout!r}; known: {', '.join(DESCRIBE_LAYOUTS)}") from None
