"""What a composed query's change replaces: the phrases it names, the concepts they touch, and the anchor's
texts edited as it says.

A change such as "a cartoon animal in a meadow instead of a man in a car" asks for other subjects and another
location; a stay term that still counts them rewards exactly the clips the user wants to leave.  So the change
is read first:

* **Sides**: "A instead of B", "A rather than B", "replace B with A" and "swap B for A" give the new side A and the
  replaced side B; any other text is all new side (nothing named as replaced).
* **Phrases**: each side is cut before its prepositions and conjunctions ("a man", "in a car"), so one phrase
  names one thing.
* **Touched concepts**: each phrase is embedded by the text indexer and compared with every concept's words
  (its name with a short definition).  A phrase touches the concept it is most similar to, when that
  similarity, (cos + 1) / 2, reaches ``TOUCH_FLOOR``; the phrase and the similarity are kept to be shown.
  A touched concept leaves the stay term (it is not down-weighted): the user asked for it to differ.
* **Edits** (the rule): the replaced side's words are found in the anchor's caption and each of its concept
  descriptions (word stems, in order) and replaced by the new side.  A text without them is left unedited.
  With an LMM configured the LMM edits the texts instead (``change_edits``), and the rule is its fallback.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np

from retrieval.core.scores import unit_similarity

# A bare concept name ("Location") embeds close to any phrase; the definition in the ConViS annotators' terms
# is what places a phrase.
DEFINITIONS: dict[str, str] = {
    "main-action": "Main action: what is being done, the activity or movement",
    "main-subjects": "Main subjects: who is doing it, the person, people or animal",
    "main-objects": "Main objects: the things that are held, used or handled",
    "location": "Location: where it takes place, the place, room, street or landscape",
    "order-of-actions": "Order of actions: the sequence of steps, what happens first and what follows",
}
TOUCH_FLOOR = 0.55 # (cos + 1) / 2: below it a phrase names none of the concepts well enough to drop one

_SIDES = [  # (pattern, which group is the new side, which the replaced side)
    (re.compile(r"^(?P<new>.+?)\s+(?:instead of|rather than)\s+(?P<old>.+)$", re.I), "new", "old"),
    (re.compile(r"^(?:instead of|rather than)\s+(?P<old>.+?),\s*(?P<new>.+)$", re.I), "new", "old"),
    (re.compile(r"^(?:replace|change)\s+(?P<old>.+?)\s+(?:with|by|to|into)\s+(?P<new>.+)$", re.I), "new", "old"),
    (re.compile(r"^(?:swap|exchange|trade)\s+(?P<old>.+?)\s+for\s+(?P<new>.+)$", re.I), "new", "old"),
]
_BREAKS = re.compile(r"\s*,\s*|\s+(?=(?:in|on|at|inside|outside|under|near|by|with|while|and|into|onto|across|"
                     r"through|along)\s)", re.I)
_LEADING = re.compile(r"^(?:(?:in|on|at|inside|outside|under|near|by|with|while|and|into|onto|across|through|along|"
                      r"the|a|an|some|its|his|her|their)\s+)+", re.I)
_WORD = re.compile(r"[A-Za-z0-9']+")


@dataclass(frozen=True)
class Sides:
    """A change split by its rule: the new side, and the replaced side (None: the change names none)."""

    new: str
    old: str | None
    rule: str | None  # the words that split it ("instead of", "swap ... for"); None: no rule applied


def sides(text: str) -> Sides:
    """The change's new and replaced sides, by the first rule that reads it."""
    text = text.strip().rstrip(".")
    for pattern, new, old in _SIDES:
        match = pattern.match(text)
        if match and match.group(new).strip() and match.group(old).strip():
            rule = " ... ".join(w for w in re.findall(r"instead of|rather than|replace|change|swap|exchange|trade|"
                                                      r"\bfor\b|\bwith\b|\bby\b|\bto\b|\binto\b", match.group(0),
                                                      re.I)[:1])
            return Sides(match.group(new).strip(" ,"), match.group(old).strip(" ,"), rule.lower() or None)
    return Sides(text, None, None)


def phrases(side: str) -> list[str]:
    """``side`` cut before its prepositions and conjunctions: one thing a phrase."""
    return [p.strip() for p in _BREAKS.split(side) if p and _core(p)]


def _core(phrase: str) -> str:
    """The phrase without its leading prepositions and articles: what is put into, or looked for in, a text."""
    return _LEADING.sub("", phrase.strip()).strip(" ,.;")


def _stem(word: str) -> str:
    """A crude stem, enough to find "walking" as "walk" and "bicycles" as "bicycle"."""
    word = word.lower()
    for ending in ("ing", "ed", "es", "s"):
        if word.endswith(ending) and len(word) - len(ending) >= 3:
            return word[:-len(ending)]
    return word


@dataclass(frozen=True)
class Touch:
    """One phrase of the change and the concept it touches, with their similarity, (cos + 1) / 2."""

    phrase: str
    concept: str
    similarity: float

    def as_dict(self) -> dict:
        return {"phrase": self.phrase, "concept": self.concept, "similarity": round(self.similarity, 4)}


def touched(change: str, probes: dict[str, str], embed: Callable[[Sequence[str]], np.ndarray]) -> list[Touch]:
    """Each phrase of ``change`` (both sides) with the concept it touches (``probes``: concept key -> its words);
    a phrase that reaches ``TOUCH_FLOOR`` with no concept touches none."""
    split = sides(change)
    found = [p for side in (split.old, split.new) if side for p in phrases(side)]
    if not found or not probes:
        return []
    vectors = np.asarray(embed([*found, *probes.values()]), np.float64)
    sims = unit_similarity(vectors[:len(found)] @ vectors[len(found):].T)
    keys = list(probes)
    return [Touch(phrase, keys[int(np.argmax(row))], float(np.max(row)))
            for phrase, row in zip(found, sims, strict=True) if np.max(row) >= TOUCH_FLOOR]


def concept_probes(words: dict[str, str]) -> dict[str, str]:
    """concept key -> what a phrase is read against: its definition, or, for a free-text concept, its own words.
    The anchor's own descriptions are not read: a main-action description names its subject ("A man talks on a
    phone"), so "a man" would read as the action."""
    return {key: DEFINITIONS.get(key, text) for key, text in words.items()}


def edit(text: str, change: str) -> str | None:
    """``text`` with the change's replaced side put as its new side (the rule); None when the change names no
    replaced side or ``text`` holds none of its words (in order, by stem).  The whole replaced side is looked for
    first; else, when both sides have as many phrases, each replaced phrase is swapped for its counterpart."""
    split = sides(change)
    if split.old is None:
        return None
    whole = _replace(text, _core(split.old), _core(split.new))
    if whole is not None:
        return whole
    old, new = phrases(split.old), phrases(split.new)
    if len(old) < 2 or len(old) != len(new):
        return None
    edited = text
    for was, now in zip(old, new, strict=True):
        edited = _replace(edited, _core(was), _core(now)) or edited
    return edited if edited != text else None


def _replace(text: str, old: str, new: str) -> str | None:
    """``text`` with the first run of words whose stems are ``old``'s replaced by ``new``; None: no such run."""
    wanted = [_stem(w) for w in _WORD.findall(old)]
    words = list(_WORD.finditer(text))
    stems = [_stem(m.group(0)) for m in words]
    for start in range(len(stems) - len(wanted) + 1 if wanted else 0):
        if stems[start:start + len(wanted)] == wanted:
            return text[:words[start].start()] + new + text[words[start + len(wanted) - 1].end():]
    return None


CAPTION_TEXT = "caption"  # the anchor's caption among the texts an edit reads (the rest are concept keys)
RULE, UNEDITED = "rule", "unedited"  # who edited a text, beside "lmm:<model id>"


@dataclass(frozen=True)
class TextEdit:
    """One of the anchor's texts after the change: the edited text (None: left as it was), who edited it (``RULE``,
    "lmm:<model id>" or ``UNEDITED``) and whether the edit came from the edit cache."""

    text: str | None
    by: str
    cached: bool = False

    def as_dict(self) -> dict:
        return {"by": self.by, "cached": self.cached}


def text_label(name: str) -> str:
    """One of the anchor's texts in words: "caption", or "<concept> description"."""
    return name if name == CAPTION_TEXT else f"{name} description"


def rule_edit(text: str, change: str) -> TextEdit:
    """``text`` edited by the rule (``edit``), or left unedited."""
    edited = edit(text, change)
    return TextEdit(edited, RULE if edited else UNEDITED)


@dataclass(frozen=True)
class ChangeReading:
    """What the change touched and what it left to stay, and the anchor's texts the rule edited."""

    touches: tuple[Touch, ...]
    stay: tuple[str, ...]  # the concepts the stay term scores
    left: tuple[str, ...]  # the concepts the change touched, which leave the stay term
    chosen: bool  # the concepts were named (-c): they all stay, touched or not
    edited: dict[str, str]  # "caption" or a concept key -> the anchor's text, edited
    unedited: tuple[str, ...]  # the anchor's texts left as they were
    edits: dict[str, TextEdit] = field(default_factory=dict)  # every text: who edited it, and whether from cache

    def as_dict(self) -> dict:
        return {"touched": [t.as_dict() for t in self.touches], "stay": list(self.stay), "left": list(self.left),
                "concepts_named": self.chosen, "edited": dict(self.edited), "unedited": list(self.unedited),
                "edited_by": {name: e.as_dict() for name, e in self.edits.items()}}

    def footnote(self) -> str:
        """One line: which concepts the change touched, by which phrase, and what that did to the stay term."""
        if not self.touches:
            return "the change touched no concept: every concept stays"
        best: dict[str, Touch] = {}
        for t in self.touches:  # each concept by the phrase that touched it most
            if t.concept not in best or t.similarity > best[t.concept].similarity:
                best[t.concept] = t
        said = ", ".join(f"{t.concept} ('{t.phrase}', {t.similarity:.2f})" for t in best.values())
        if self.chosen:
            return f"the change touched {said}; the concepts given with -c all stay"
        if not self.left:
            return f"the change touched {said}: every concept, so all stay"
        return f"the change touched {said}: left out of stay; stay = {', '.join(self.stay)}"


def read_change(change: str, concepts: dict[str, str], chosen: bool,
                embed: Callable[[Sequence[str]], np.ndarray], anchor_texts: dict[str, str],
                editor: Callable[[dict[str, str]], dict[str, TextEdit]] | None = None) -> ChangeReading:
    """The change read against ``concepts`` (key -> words) and the anchor's texts (``caption`` and concept key
    -> its text): touched concepts leave the stay term unless ``chosen`` (-c) or every one is touched.  ``editor``
    edits the texts (name -> text in, name -> TextEdit out); without one, the rule does."""
    touches = tuple(touched(change, concept_probes(concepts), embed))
    hit = {t.concept for t in touches}
    left = () if chosen or hit >= set(concepts) else tuple(k for k in concepts if k in hit)
    edits = editor(anchor_texts) if editor is not None and anchor_texts else \
        {name: rule_edit(text, change) for name, text in anchor_texts.items()}
    edited = {name: e.text for name, e in edits.items() if e.text}
    unedited = tuple(n for n in anchor_texts if n not in edited)
    return ChangeReading(touches, tuple(k for k in concepts if k not in left), left, chosen, edited, unedited, edits)
