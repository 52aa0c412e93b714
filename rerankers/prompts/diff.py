"""What a video LMM is asked when it tells two clips apart (VidDiff), and how its answers are read.

The wording is VidDiff's (jmhb0/viddiff, ``lmms/lmm_prompts.py``), with three deliberate changes:

* Closed mode asks about one statement at a time, in VidDiff's one-difference prompt
  (``prompt_template_mcq_ab``).  VidDiff's own closed runs put every statement of a pair in one JSON
  prompt (``prompt_template_mode_2``); one statement a question lets the answer be read as a
  probability, and a statement's answer does not depend on which others were asked with it.
* That prompt ends 'If video 'a', then write "The answer is (a)"'.  Here it asks for the letter alone,
  so the answer's first token is the letter and P(a) / (P(a) + P(b)) is read there.  (After "(" many
  tokenizers write "(a" as one token, so prefilling "The answer is (" would read the letter at a token
  the model seldom produces.)
* The two clips go in as one video, video a's frames first (how every family here takes a pair), so the
  line that says how the videos were passed follows VidDiff's frame-list description
  (``video_rep_description_frames``): how many frames are each video's, and the frame rate when one was
  fixed (``--fps``).

The open-mode request is ``prompt_template_open`` word for word (spacing included), with that same line.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from retrieval.core.errors import ConvisError


class DiffInputError(ConvisError, ValueError):
    """A question that cannot be asked as given (empty, too long): said in one line."""

    exit_code, http_status = 2, 400


# Bump whenever a text below or the way answers are read changes: it is part of every cached answer's key.
DIFF_PROMPT_VERSION = "viddiff.1"

LETTERS = ("a", "b")  # the answers, in video order
MAX_ACTION_CHARS = 1000  # VidDiffBench's longest action description is a few hundred characters
MAX_STATEMENT_CHARS = 500

# prompt_template_mcq_ab, the last two instructions changed to ask for the letter alone (see above)
CLOSED_TEMPLATE = """\
Here are two videos of an action with the following description: "{action_description}".
{video_representation_description}

Here is a difference that describe how the action can be performed differently:
{differences_annotated}

Your task is to predict whether the difference is more true for video 'a' or video 'b'.
If video 'a', answer a.
If video 'b', answer b.
Answer with the single letter only."""

# prompt_template_open, word for word (its trailing spaces included, hence a line a string)
OPEN_TEMPLATE = "\n".join([
    'Here are two videos of an action with the following description: "{action_description}".',
    '{video_representation_description}',
    '',
    "Return a list of 'differences' in how the action is being performed. ",
    "Each difference should have a 'description' that is a specific statements that is more true in one video "
    "compared to the other video. ",
    "Then there is a 'prediction' which is 'a' if the statement applies more to video a and 'b' if it applies more "
    "to video b.",
    '',
    'The difference descriptions should be visual and about how the action is performed. ',
    "For example 'the jump is higher', or 'the arm is more straight'.",
    '',
    'The difference descriptions should not refer to a specific video. ',
    "For example you would not say 'the jump in video B is higher'. ",
    "Instead, the 'description' would be 'the jump is higher', and the 'prediction' is 'b'.",
    '',
    'Suggest no more than {n_differences} differences.',
    '',
    '',
    "Return a json like this, replacing '...' with actual content:",
    '{',
    '    "0" :  {',
    '            "description" : "....",',
    '            "prediction" : "a|b"',
    '        },',
    '    "1" :  {',
    '            "description" : "....",',
    '            "prediction" : "a|b"',
    '        }, ',
    '    ...',
    '}',
    '',
])

# video_rep_description_frames, for one video made of both clips' frames
VIDEO_TEMPLATE = """\
We have passed one video into the prompt: the frames of video a followed by the frames of video b.
The first {n_a} frames are video a. The last {n_b} frames are video b."""
RATE_LINE = "\nThe frame rate is the same and is {fps}."
RATES_LINE = "\nThe frame rate of video a is {fps_a} and of video b is {fps_b}."


def video_description(n_a: int, n_b: int, fps_a: float | None = None, fps_b: float | None = None) -> str:
    """How the pair was passed: each video's frame count and, when sampled at a fixed rate, the rate."""
    text = VIDEO_TEMPLATE.format(n_a=n_a, n_b=n_b)
    if fps_a is None or fps_b is None:
        return text
    if _rate(fps_a) == _rate(fps_b):
        return text + RATE_LINE.format(fps=_rate(fps_a))
    return text + RATES_LINE.format(fps_a=_rate(fps_a), fps_b=_rate(fps_b))


def _rate(fps: float) -> str:
    return f"{round(float(fps), 2):g}"


def closed_question(action: str, statement: str, video: str) -> str:
    """The one-statement question: which video the statement is more true of."""
    return (CLOSED_TEMPLATE.replace("{action_description}", check_action(action))
            .replace("{video_representation_description}", video)
            .replace("{differences_annotated}", check_statement(statement)))


def open_request(action: str, n_differences: int, video: str) -> str:
    """The open-mode request: up to ``n_differences`` differences, each with the video it applies to."""
    if n_differences < 1:
        raise DiffInputError("ask for at least one difference")
    return (OPEN_TEMPLATE.replace("{n_differences}", str(int(n_differences)))
            .replace("{action_description}", check_action(action))
            .replace("{video_representation_description}", video))


def check_action(action: str) -> str:
    return _bounded(action, MAX_ACTION_CHARS, "the action description",
                    "; say what the clips show, e.g. --action 'barbell squat'")


def check_statement(statement: str) -> str:
    return _bounded(statement, MAX_STATEMENT_CHARS, "a difference statement", quote=True)


def _bounded(given: str, limit: int, what: str, hint: str = "", quote: bool = False) -> str:
    """``given`` with its spaces collapsed; empty or longer than ``limit`` is one line naming ``what`` (``quote``:
    and its start, to find it among many)."""
    text = " ".join(str(given).split())
    if not text:
        raise DiffInputError(f"{what} is empty{hint}")
    if len(text) > limit:
        raise DiffInputError(f"{what} has {len(text)} characters (at most {limit}): {text[:60]}..." if quote
                             else f"{what} has {len(text)} characters; at most {limit}")
    return text


# -- reading answers ---------------------------------------------------------------------------------
_LETTER = re.compile(r"^\W*(?:video\s+)?\(?([ab])\)?\W*$", re.IGNORECASE)


def parse_letter(text: str) -> str | None:
    """'a' or 'b' from a short answer ("a", " B", "(a)", "Video b."); None when it says anything else."""
    found = _LETTER.match(str(text).strip())
    return found.group(1).lower() if found else None


@dataclass(frozen=True)
class Proposed:
    """One difference an LMM proposed: a statement and the video it says the statement fits more (None: unsaid)."""

    description: str
    video: str | None


@dataclass(frozen=True)
class ProposedList:
    """What was read from an open-mode answer, and what could not be (one line each)."""

    items: tuple[Proposed, ...]
    problems: tuple[str, ...]
    read_as: str  # "json", "lines" or "nothing"


def parse_differences(answer: str, limit: int) -> ProposedList:
    """The differences in an open-mode answer: JSON first (VidDiff's shape, a list, or a dict of strings), then
    numbered or bulleted lines. Nothing is dropped silently: every skipped piece is named in ``problems``."""
    text = str(answer or "").strip()
    if not text:
        return ProposedList((), ("the answer is empty",), "nothing")
    parsed = _json_items(text)
    items, problems, how = (parsed[0], parsed[1], "json") if parsed is not None else ([], [], "json")
    if not items:  # no JSON, or JSON with nothing in it (a "[1]" in prose): the numbered lines, if any
        lines = _line_items(text)
        if lines[0] or not problems:
            items, problems, how = lines[0], lines[1], "lines"
    if not items and not problems:
        problems = [f"no difference could be read from the answer: {_short(text)}"]
        how = "nothing"
    if len(items) > limit:
        problems = [*problems, f"{len(items)} differences proposed, {limit} asked for: kept the first {limit}"]
        items = items[:limit]
    return ProposedList(tuple(items), tuple(problems), how)


def _json_items(text: str) -> tuple[list[Proposed], list[str]] | None:
    values = _json_values(text)
    if not values:
        return None
    entries: list[tuple[str, object]] = []
    for value in values:
        entries.extend(_entries(value, len(entries)))
    return _collect(((f"difference {key}", json.dumps(value), value) for key, value in entries), _json_item)


def _entries(value, start: int) -> list[tuple[str, object]]:
    """The items one JSON value holds: one item ({"description", ...}), a dict of items, or a list of them."""
    if isinstance(value, dict) and isinstance(value.get("differences"), (list, dict)):
        value = value["differences"]
    if isinstance(value, dict) and "description" in value:
        return [(str(start), value)]
    if isinstance(value, dict):
        return [(str(k), v) for k, v in value.items()]
    if isinstance(value, list):
        return [(str(start + i), v) for i, v in enumerate(value)]
    return []


def _collect(pieces, read) -> tuple[list[Proposed], list[str]]:
    """Each (name, text, piece) read with ``read``; a piece without a description, naming no video, or too long
    to ask about is said."""
    items, problems = [], []
    for name, text, piece in pieces:
        item = read(piece)
        if item is None:
            problems.append(f"{name} has no description: {_short(text)}")
            continue
        if len(item.description) > MAX_STATEMENT_CHARS:
            problems.append(f"{name} is longer than {MAX_STATEMENT_CHARS} characters: {_short(item.description)}")
            continue
        items.append(item)
        if item.video is None:
            problems.append(f"{name} names no video (a or b): {_short(item.description)}")
    return items, problems


def _json_values(text: str) -> list:
    """Every JSON object or list in the text, in order (code fences and trailing commas tolerated): a value that
    does not parse is skipped from its first character, so the objects inside it can still be read."""
    body = re.sub(r",(\s*[}\]])", r"\1", re.sub(r"```(?:json)?", "", text))
    decoder, values, at = json.JSONDecoder(), [], 0
    while True:
        starts = [i for i in (body.find("{", at), body.find("[", at)) if i >= 0]
        if not starts:
            return values
        try:
            value, at = decoder.raw_decode(body, min(starts))
        except json.JSONDecodeError:
            at = min(starts) + 1
            continue
        if isinstance(value, (dict, list)) and value:
            values.append(value)


def _json_item(value) -> Proposed | None:
    if isinstance(value, str):
        return _line_item(value)
    if not isinstance(value, dict):
        return None
    description = " ".join(str(value.get("description") or "").split())
    if not description:
        return None
    return Proposed(description, parse_letter(str(value.get("prediction") or "")))


_NUMBERED = re.compile(r"^\s*(?:\d+\s*[.):]|[-*\u2022])\s+(.+?)\s*$")
_TRAILING_VIDEO = re.compile(
    r"^(.*?)[\s:,;.\-\u2013>]*\(?(?:prediction\s*[:=]\s*|video\s+|applies (?:more )?to (?:video )?)'?([ab])'?\)?\W*$",
    re.IGNORECASE)


def _line_items(text: str) -> tuple[list[Proposed], list[str]]:
    numbered = ((line, _NUMBERED.match(line)) for line in text.splitlines())
    return _collect((("a difference", line, found.group(1)) for line, found in numbered if found), _line_item)


def _line_item(text: str) -> Proposed | None:
    body = " ".join(text.split())
    found = _TRAILING_VIDEO.match(body) or re.match(r"^(.*?)\s*\(([ab])\)\W*$", body, re.IGNORECASE)
    description, video = (found.group(1), found.group(2).lower()) if found else (body, None)
    description = re.sub(r"^(?:description\s*[:=]\s*)", "", description, flags=re.IGNORECASE).strip(" \"'.,;:-")
    return Proposed(description, video) if description else None


def _short(text: str, limit: int = 80) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."
