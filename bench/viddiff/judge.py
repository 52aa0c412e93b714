"""Open-mode judges: which predicted difference describes which ground-truth difference.

VidDiff (``eval_viddiff.py``, ``do_matching``) asks gpt-4o, with the prompt ``prompt_open_eval_matching``, to
match each labelled ground-truth difference to at most one predicted difference, then
(``test_reverse_statements``) asks gpt-4o-mini, with ``prompt_open_eval_check_opposite``, whether each matched
pair of descriptions says opposite things, in which case the predicted letter flips. Both prompts below are
copied word for word from ``eval_viddiff.py``, and filled as that code fills them.

Two local judges stand in for gpt-4o (a :class:`Judge` is anything with ``match(action, gt, pred)``):

- ``lmm:SPEC`` (:class:`LmmJudge`): a local video LMM (a convis reranker) asked the same prompts, text only.
  The answer is read as the structured output VidDiff requests, ``{"matches": [{"key_dict0", "key_dict1"}]}``,
  or as the ``{gt_key: pred_key}`` object the prompt text shows; an unreadable answer means no matches for
  that sample, reported. It also runs the reverse-statement check.
- ``sbert[:THRESHOLD]`` (:class:`SbertJudge`): all-MiniLM-L6-v2 cosine similarity between descriptions, a
  one-to-one assignment (``scipy.optimize.linear_sum_assignment``) maximising the total similarity, pairs below
  the threshold left unmatched. It cannot tell a statement from its opposite, so the reverse-statement check is
  not applied with it.

Every judge's matching is checked as ``_verify_matching_properties`` means to: keys that are not labelled
differences, values that are not predicted keys ("None" included: no match) and a predicted key used twice
(the first use kept) are dropped, each drop reported. Recall measured with a local judge is not comparable with
VidDiff's published leaderboard, which gpt-4o judged.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Protocol

from bench.loaders import BenchDataError
from bench.viddiff.data import VidDiffSample
from bench.viddiff.metrics import Item, open_items, open_recall
from retrieval.core.errors import ConvisError

DEFAULT_JUDGE = "lmm:qwen2.5-vl"
DEFAULT_THRESHOLD = 0.5
REVERSE_BATCH = 6  # statement pairs per check, test_reverse_statements(batch_size=6) in eval_viddiff()
NOT_COMPARABLE = ("open-mode recall measured with a local judge ({judge}) is not comparable with VidDiff's "
                  "published leaderboard, which used gpt-4o as the judge")

# eval_viddiff.py, prompt_open_eval_matching (verbatim)
MATCHING_PROMPT = """\
You are analyzing videos of people performing a specific action described as "{action_description}."

In this task, a "difference" refers to how two people might perform the same action in distinct ways. 
Each difference consists of:
- A name (key) and
- A description that explains how the two performances differ visually.

You are provided with two dictionaries:
- Dictionary 0: {differences0}
- Dictionary 1: {differences1}

Your task is to match the differences from Dictionary 0 to Dictionary 1. Here's how:
1. For each entry in Dictionary 0, find the best match in Dictionary 1.
2. Each item in Dictionary 1 can only be used once.
3. Only match entries if their description strings are visually similar, even if the word choices differ. If no suitable match exists, return "None."

Your output should be a JSON object where:
- The keys are from Dictionary 0: {dict0_keys}.
- The values are a key from Dictionary 1 or "None" if no match is found. 
- The available keys from Dictionary 1 are: {dict1_keys}.

Example output format:
{
    "0": "3",
    "1": "None",
    "2": "1",
    "3": "5",
    ...
    "{final}" : "0"
}
Important: the keys in this dictionary should be" {dict0_keys}
"""  # noqa: W291, E501 (verbatim, trailing spaces included)

# eval_viddiff.py, prompt_open_eval_check_opposite (verbatim; the active one, not the commented-out draft)
OPPOSITE_PROMPT = """
Task:  
You will be given pairs of statements. Your task is to determine the logical relationship between each pair.

Instructions:
1. Analyze Each Pair: For each pair of statements, carefully analyze their meaning and relationship.
2. Categorization:
   - Return "0" if the statements are equivalent, very similar, or differ only in minor details.  
     Example: "X is bigger than Y" and "X is larger than Y" should both return "0".
   - Return "1" if the statements are direct opposites in meaning.  
     Example: "X is bigger than Y" and "X is smaller than Y" should return "1".
3. Edge Cases:
   - Avoid returning "1" for statements that are not true opposites, even if they have some differences in detail or degree.
     Example: "X is much bigger than Y" and "X is slightly bigger than Y" should still return "0".

Output Format:
- Your response should be a JSON object with a single key "results" and an array of string values "0" or "1" as its value.
- The array should exactly match the number of statement pairs given in the input.

Input Format:
- The list of statement pairs will be provided in the following format:

{statements}

Important Requirements:
- Ensure that each value in the output array is either "0" or "1".
- The length of the "results" array must exactly match the number of input pairs. 
"""  # noqa: W291, E501 (verbatim, trailing spaces included)


class UnreadableAnswer(ConvisError, ValueError):
    """The judge's answer holds no matching that can be read."""

    exit_code, http_status = 1, 500
    label = "internal error"


class Judge(Protocol):
    name: str

    def match(self, action: str, gt: dict[str, str], pred: dict[str, str]) -> dict[str, str]:
        """gt key -> pred key, one to one; unmatched gt keys are left out."""


def _key_order(key: str) -> tuple:
    return (0, int(key), "") if key.isdigit() else (1, 0, key)


def matching_prompt(action: str, gt: dict[str, str], pred: dict[str, str]) -> str:
    """The matching prompt filled as ``do_matching`` fills it (same replacements, same order, ``json.dumps``)."""
    prompt = MATCHING_PROMPT.replace("{final}", f"{len(gt) - 1}")
    prompt = prompt.replace("{action_description}", action)
    prompt = prompt.replace("{differences0}", json.dumps(gt))
    prompt = prompt.replace("{differences1}", json.dumps(pred))
    prompt = prompt.replace("{dict0_keys}", json.dumps(sorted(gt, key=_key_order)))
    return prompt.replace("{dict1_keys}", json.dumps(sorted(pred, key=_key_order)))


def opposite_prompt(pairs: list[tuple[str, str]]) -> str:
    """The reverse-statement prompt for a batch, statements written as ``str`` of a list of [gt, pred] lists."""
    return OPPOSITE_PROMPT.replace("{statements}", str([list(p) for p in pairs]))


def _json_objects(text: str) -> list[Any]:
    """Every JSON object in ``text`` (an answer may wrap it in prose or a ```json fence)."""
    decoder, found, i = json.JSONDecoder(), [], 0
    while (i := text.find("{", i)) != -1:
        try:
            value, end = decoder.raw_decode(text, i)
        except json.JSONDecodeError:
            i += 1
            continue
        found.append(value)
        i = end
    return found


def _key(value: Any) -> Optional[str]:
    """A key as a string; None, "None", "null" and "" mean no match."""
    if value is None or isinstance(value, (dict, list)):
        return None
    text = str(value).strip()
    return None if text in ("", "None", "none", "null") else text


def parse_matching(text: str) -> dict[str, Optional[str]]:
    """gt key -> pred key (None: no match) from the judge's answer; a repeated gt key keeps its last value,
    as ``{el["key_dict0"]: el["key_dict1"] for el in matches}`` does."""
    for obj in _json_objects(text):
        if isinstance(obj, dict) and isinstance(obj.get("matches"), list):
            pairs = [m for m in obj["matches"] if isinstance(m, dict) and "key_dict0" in m]
            if pairs or not obj["matches"]:
                return {str(m["key_dict0"]): _key(m.get("key_dict1")) for m in pairs}
        elif isinstance(obj, dict) and obj and "matches" not in obj and all(
                not isinstance(v, (dict, list)) for v in obj.values()):
            return {str(k): _key(v) for k, v in obj.items()}
    raise UnreadableAnswer(text)


def parse_opposites(text: str, n: int) -> list[bool]:
    """The ``{"results": ["0" | "1", ...]}`` answer as booleans; wrong values or length are unreadable."""
    for obj in _json_objects(text):
        results = obj.get("results") if isinstance(obj, dict) else None
        if isinstance(results, list):
            values = [str(v).strip() for v in results]
            if len(values) == n and all(v in ("0", "1") for v in values):
                return [v == "1" for v in values]
    raise UnreadableAnswer(text)


def validate_matching(match: dict[str, Optional[str]], gt: dict[str, str],
                      pred: dict[str, str]) -> tuple[dict[str, str], list[str]]:
    """The matching restricted to real keys, one to one, and a line for each thing dropped."""
    out: dict[str, str] = {}
    dropped: list[str] = []
    for g, p in match.items():
        if g not in gt:
            dropped.append(f"gt key {g!r} is not a labelled difference")
        elif p is None:
            continue
        elif p not in pred:
            dropped.append(f"gt {g} -> {p!r}: not a predicted key")
        elif p in out.values():
            dropped.append(f"gt {g} -> {p}: predicted key {p} already matched")
        else:
            out[g] = p
    return out, dropped


# ---------------------------------------------------------------- judges


@dataclass
class LmmJudge:
    """A local LMM asked VidDiff's prompts as text (``answer_text``); built on first use."""

    spec: str
    device: Optional[str] = None
    model: Any = None
    max_new_tokens: int = 512
    name: str = field(init=False)

    def __post_init__(self) -> None:
        self.name = f"lmm:{self.spec}"

    def _model(self):
        if self.model is None:
            from rerankers.factory import create_reranker  # torch and transformers, only when judging

            self.model = create_reranker(self.spec, device=self.device)
        return self.model

    def ask(self, prompt: str) -> str:
        return str(self._model().answer_text(prompt, self.max_new_tokens))

    def match(self, action: str, gt: dict[str, str], pred: dict[str, str]) -> dict[str, str]:
        return validate_matching(parse_matching(self.ask(matching_prompt(action, gt, pred))), gt, pred)[0]

    def raw_match(self, action: str, gt: dict[str, str], pred: dict[str, str]) -> dict[str, Optional[str]]:
        """The matching as answered, before validation (so the caller can report what is dropped)."""
        return parse_matching(self.ask(matching_prompt(action, gt, pred)))

    def opposites(self, pairs: list[tuple[str, str]]) -> list[bool]:
        """For each (gt, pred) description pair, does the judge read them as opposites? (One batch.)"""
        return parse_opposites(self.ask(opposite_prompt(pairs)), len(pairs))


@dataclass
class SbertJudge:
    """Descriptions matched by MiniLM cosine similarity: best one-to-one assignment, pairs under ``threshold``
    left unmatched."""

    threshold: float = DEFAULT_THRESHOLD
    device: Optional[str] = None
    encoder: Any = None
    name: str = field(init=False)

    def __post_init__(self) -> None:
        self.name = f"sbert:{self.threshold:g}"

    def _encoder(self):
        if self.encoder is None:
            from indexers.factory import create_indexer  # the text indexer: all-MiniLM-L6-v2, bundled offline

            self.encoder = create_indexer("text", device=self.device)
        return self.encoder

    def match(self, action: str, gt: dict[str, str], pred: dict[str, str]) -> dict[str, str]:
        if not gt or not pred:
            return {}
        import numpy as np
        from scipy.optimize import linear_sum_assignment

        g, p = list(gt), list(pred)
        vectors = self._encoder().embed_texts([gt[k] for k in g] + [pred[k] or "" for k in p])
        sim = np.asarray(vectors[: len(g)], dtype=np.float64) @ np.asarray(vectors[len(g):], dtype=np.float64).T
        rows, cols = linear_sum_assignment(sim, maximize=True)
        return {g[r]: p[c] for r, c in zip(rows, cols, strict=False) if sim[r, c] >= self.threshold}


def make_judge(spec: str, device: Optional[str] = None) -> Judge:
    """``lmm:SPEC`` (``lmm`` alone: qwen2.5-vl) or ``sbert[:THRESHOLD]``."""
    kind, _, arg = spec.strip().partition(":")
    if kind == "lmm":
        return LmmJudge(arg.strip() or DEFAULT_JUDGE.split(":", 1)[1], device)
    if kind == "sbert":
        try:
            threshold = float(arg) if arg.strip() else DEFAULT_THRESHOLD
        except ValueError:
            raise BenchDataError(f"--judge sbert:THRESHOLD takes a number, got {arg!r}") from None
        return SbertJudge(threshold, device)
    raise BenchDataError(f"--judge is lmm:SPEC (a local video LMM) or sbert[:THRESHOLD], got {spec!r}")


# ---------------------------------------------------------------- open-mode scoring


def _descriptions(items: dict[str, Item]) -> dict[str, str]:
    return {k: v.description or "" for k, v in items.items()}


def _match_one(judge: Judge, sample: VidDiffSample, items: dict[str, Item], report: Callable[[str], None]) -> dict:
    pred = _descriptions(items)
    try:
        raw = (judge.raw_match if hasattr(judge, "raw_match") else judge.match)(
            sample.action_description, sample.differences, pred)
    except UnreadableAnswer:
        report(f"judge answer unreadable for sample {sample.sample_key}; counted as no matches")
        return {}
    match, dropped = validate_matching(raw, sample.differences, pred)
    for line in dropped:
        report(f"sample {sample.sample_key}: dropped from the judge's matching: {line}")
    return match


def _reverse_check(judge: Judge, samples: list[VidDiffSample], items: list[dict[str, Item]],
                   matches: list[dict[str, str]], report: Callable[[str], None]) -> list[set[str]]:
    """``test_reverse_statements``: matched pairs in sample order, gt keys in numeric order, asked
    ``REVERSE_BATCH`` at a time; the gt keys whose pair the judge calls opposite. An unreadable batch flips
    nothing (reported)."""
    where = [(i, k) for i, (s, m) in enumerate(zip(samples, matches, strict=False)) for k in sorted(m, key=_key_order)
             if items[i][m[k]].description is not None]
    pairs = [(samples[i].differences[k], items[i][matches[i][k]].description) for i, k in where]
    opposite: list[set[str]] = [set() for _ in samples]
    for start in range(0, len(pairs), REVERSE_BATCH):
        try:
            flags = judge.opposites(pairs[start:start + REVERSE_BATCH])
        except UnreadableAnswer:
            keys = ", ".join(f"{samples[i].sample_key}/{k}" for i, k in where[start:start + REVERSE_BATCH])
            report(f"judge answer unreadable for the reverse-statement check of {keys}; not flipped")
            continue
        for (i, k), flag in zip(where[start:start + REVERSE_BATCH], flags, strict=False):
            if flag:
                opposite[i].add(k)
    return opposite


def score_open(samples: list[VidDiffSample], predictions: list[dict], judge: Judge,
               report: Callable[[str], None]) -> dict:
    """Open-mode recall: cut each answer to ``n_open`` items, match with ``judge``, run the reverse-statement
    check where the judge can, score. Everything dropped or unreadable goes to ``report`` and into the result."""
    notes: list[str] = []

    def note(line: str) -> None:
        notes.append(line)
        report(line)

    items, cut = open_items(samples, predictions)
    for line in cut:
        note(line)
    matches = [_match_one(judge, s, its, note) if s.gt and its else {} for s, its in zip(samples, items, strict=False)]
    reverse = hasattr(judge, "opposites")
    opposite = _reverse_check(judge, samples, items, matches, note) if reverse else None
    result = open_recall(samples, items, matches, opposite)
    result["judge"] = judge.name
    result["reverse_statement_check"] = ("applied (test_reverse_statements)" if reverse else
                                         "not applied: this judge cannot tell a statement from its opposite")
    result["comparability"] = NOT_COMPARABLE.format(judge=judge.name)
    result["truncated_samples"] = len(cut)
    result["judge_problems"] = [n for n in notes if n not in cut]
    result["matches"] = {s.sample_key: m for s, m in zip(samples, matches, strict=False)}
    return result
