"""Differences in words between two clips: a video LMM asked in VidDiff's closed and open modes.

Closed mode: for each statement ("wider stance"), the LMM sees the pair as one video (video a's frames first)
and is asked which video the statement is more true of; the answer is P(a) / (P(a) + P(b)) read at the first
answer token (``expected``) or the parsed greedy letter (``greedy``). ``symmetric`` asks again with the clips
swapped and averages P(a) over both orders, so a model's leaning towards the first (or second) video cancels.

Open mode: the LMM proposes up to N differences, each with the video it applies to; each proposed statement
is then asked in closed mode, so every item carries a probability.

Every answer is kept in the score cache (keyed by the model, its frames, the exact question and both clips),
so asking again makes no model call. How much two clips differ is the sum over statements of ``|2 P(a) - 1|``:
a statement the model can tell apart with certainty counts 1, one it cannot counts 0.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, replace
from typing import Mapping

import numpy as np

from rerankers.base import UNREADABLE, PairScore
from rerankers.frames import padded_count
from rerankers.prompts.diff import (
    LETTERS,
    ProposedList,
    check_action,
    check_statement,
    closed_question,
    open_request,
    parse_differences,
    video_description,
)
from retrieval.core.defaults import CANT_TELL, CANT_TELL_MARGIN
from retrieval.core.sampling import FrameSpec
from retrieval.lmm.cached_scores import CachedScores
from retrieval.lmm.clips import ClipRef, FrameCache, seen

MAX_RATE_FRAMES = 75  # frames a video at a fixed rate: VidDiff's baselines cap a pair at 150 images (max_imgs)
OPEN_TOKENS = 512  # room for VidDiff's JSON answer with a handful of differences


@dataclass(frozen=True)
class Verdict:
    """One statement's answer: P(video a) (both orders combined when symmetric) and each order's own answer."""

    key: str
    statement: str
    p_a: float | None
    answers: tuple[PairScore, ...]  # (a, b) first; with symmetric, then (b, a), whose score is P(video b)

    @property
    def prediction(self) -> str | None:
        """'a' or 'b'; None when unreadable or exactly undecided (e.g. the two orders' letters disagree)."""
        if self.p_a is None or self.p_a == 0.5:
            return None
        return LETTERS[0] if self.p_a > 0.5 else LETTERS[1]

    @property
    def told(self) -> str | None:
        """What a reader is told: 'a' or 'b', "can't tell" when P(a) is within ``CANT_TELL_MARGIN`` of 0.5, None
        when unreadable."""
        if self.p_a is None:
            return None
        return CANT_TELL if abs(self.p_a - 0.5) < CANT_TELL_MARGIN else self.prediction

    @property
    def strength(self) -> float:
        """How surely the statement tells the clips apart: |2 P(a) - 1|, 0 when unreadable."""
        return 0.0 if self.p_a is None else abs(2.0 * self.p_a - 1.0)

    def to_dict(self) -> dict:
        return {"key": self.key, "statement": self.statement, "prediction": self.prediction, "told": self.told,
                "p_a": _round(self.p_a), "p_b": _round(None if self.p_a is None else 1.0 - self.p_a),
                "strength": round(self.strength, 4),
                "orders": [{"first": "a" if i == 0 else "b", "p_first": _round(s.score), "answer": s.raw,
                            "letter_probs": None if s.probs is None else [round(p, 6) for p in s.probs]}
                           for i, s in enumerate(self.answers)]}


@dataclass(frozen=True)
class Proposal:
    """A difference the LMM proposed (open mode), with the video it named and its closed-mode re-score."""

    description: str
    proposed: str | None
    verdict: Verdict

    def to_dict(self) -> dict:
        return {"description": self.description, "proposed": self.proposed, **self.verdict.to_dict()}


@dataclass(frozen=True)
class Seen:
    """What the model saw of the pair: frame numbers and times of each clip, and the prompt's frame counts."""

    a: dict
    b: dict
    frames_a: int
    frames_b: int
    rates: tuple[float, float] | None

    def to_dict(self) -> dict:
        return {"a": self.a, "b": self.b, "frames_in_prompt": [self.frames_a, self.frames_b],
                "fps": None if self.rates is None else [round(r, 3) for r in self.rates]}


@dataclass(frozen=True)
class DiffResult:
    a: str
    b: str
    action: str
    model: str
    mode: str
    symmetric: bool
    frames: str  # the frame rule, e.g. "linspace:16" or "rate@4:75"
    verdicts: tuple[Verdict, ...] = ()
    proposals: tuple[Proposal, ...] | None = None  # open mode only
    answer: str | None = None  # open mode: the LMM's own words
    problems: tuple[str, ...] = ()  # open mode: what could not be read from the answer
    seen: Seen | None = None
    model_calls: int = 0
    notices: tuple[str, ...] = ()
    cached: int = 0  # answers read from the score cache instead of asking the model

    @property
    def closed(self) -> bool:
        return self.proposals is None

    @property
    def scored(self) -> tuple[Verdict, ...]:
        return self.verdicts if self.closed else tuple(p.verdict for p in self.proposals)

    @property
    def differences(self) -> float:
        """How much the clips differ: the sum of the statements' strengths."""
        return float(sum(v.strength for v in self.scored))

    def predictions(self) -> dict:
        """VidDiff's prediction format: closed ``{"0": "a", ...}`` (undecided statements left out, as VidDiff
        leaves out what a model did not answer); open ``{"0": {"description": ..., "prediction": ...}}`` with the
        letter the LMM proposed, which VidDiff's open mode scores (the closed-mode re-score where it named none)."""
        if self.closed:
            return {v.key: v.prediction for v in self.verdicts if v.prediction is not None}
        return {str(i): {"description": p.description, "prediction": p.proposed or p.verdict.prediction}
                for i, p in enumerate(self.proposals) if (p.proposed or p.verdict.prediction)}

    def to_dict(self) -> dict:
        out = {"a": self.a, "b": self.b, "action": self.action, "model": self.model, "mode": self.mode,
               "symmetric": self.symmetric, "frames": self.frames, "task": "closed" if self.closed else "open",
               "predictions": self.predictions(),
               "probabilities": {v.key: {"a": _round(v.p_a), "b": _round(None if v.p_a is None else 1 - v.p_a)}
                                 for v in self.scored},
               "differences": round(self.differences, 4), "model_calls": self.model_calls,
               "cached_answers": self.cached,
               "seen": None if self.seen is None else self.seen.to_dict(), "notices": list(self.notices)}
        if self.closed:
            out["statements"] = [v.to_dict() for v in self.verdicts]
        else:
            out.update(proposals=[p.to_dict() for p in self.proposals], answer=self.answer,
                       unreadable=list(self.problems))
        return out


@dataclass
class DiffScorer:
    """Asks a reranker about pairs of clips: cache first, the model for the rest. ``fps``: frames at that fixed
    rate (at most ``max_frames`` a video) instead of the family's own rule."""

    reranker: object
    cache: CachedScores | None
    frames: FrameCache = field(default_factory=FrameCache)
    mode: str = "expected"
    symmetric: bool = False
    fps: float | None = None
    max_frames: int = MAX_RATE_FRAMES
    model_calls: int = 0
    cached: int = 0  # answers found in the cache
    _last: tuple | None = field(default=None, repr=False)  # ((a key, b key), (clip, video line)): see _view

    @property
    def spec(self) -> FrameSpec:
        if self.fps is None:
            return self.reranker.frame_spec
        return FrameSpec.at_rate(self.fps, self.max_frames, self.reranker.frame_resize())

    @property
    def tag(self) -> str:
        return self.reranker.diff_tag(self.spec)

    def closed(self, a: ClipRef, b: ClipRef, action: str, statements: Mapping[str, str]) -> list[Verdict]:
        """Each statement's verdict: which of ``a`` and ``b`` it is more true of."""
        action = check_action(action)
        texts = {key: check_statement(text) for key, text in statements.items()}
        forward = self._ask(a, b, action, list(texts.values()))
        backward = self._ask(b, a, action, list(texts.values())) if self.symmetric else None
        return [Verdict(key, text, _combined(ab, None if backward is None else backward[i]),
                        (ab,) if backward is None else (ab, backward[i]))
                for i, ((key, text), ab) in enumerate(zip(texts.items(), forward, strict=False))]

    def propose(self, a: ClipRef, b: ClipRef, action: str, most: int,
                max_new_tokens: int = OPEN_TOKENS) -> tuple[str, ProposedList]:
        """The LMM's own list of up to ``most`` differences (its words, and what was read from them)."""
        clip, view = self._view(a, b)
        request = open_request(check_action(action), most, view)
        key = _key("open", request, max_new_tokens)
        cached = self.cache.get(self.tag, key, "open", a.key, b.key) if self.cache else None
        if cached is not None:
            self.cached += 1
            return cached.raw, parse_differences(cached.raw, most)
        answer = self.reranker.answer_about([clip], request, max_new_tokens)[0]
        self.model_calls += 1
        if self.cache:
            self.cache.put(self.tag, key, "open", a.key, b.key, PairScore(None, "open", answer))
        return answer, parse_differences(answer, most)

    def seen(self, a: ClipRef, b: ClipRef) -> Seen:
        spec, multiple = self.spec, self.reranker.frame_multiple
        first, second = self.frames.get(a, spec), self.frames.get(b, spec)
        return Seen(seen(first), seen(second), padded_count(len(first.pixels), multiple),
                    padded_count(len(second.pixels), multiple), self._rates(first, second))

    def _ask(self, first: ClipRef, second: ClipRef, action: str, statements: list[str]) -> list[PairScore]:
        clip, view = self._view(first, second)
        questions = [closed_question(action, s, view) for s in statements]
        keys = [_key("closed", q) for q in questions]
        found = [self.cache.get(self.tag, k, self.mode, first.key, second.key) if self.cache else None for k in keys]
        missing = [i for i, answer in enumerate(found) if answer is None]
        self.cached += len(found) - len(missing)
        if missing:
            answers = self.reranker.which_video([clip] * len(missing), [questions[i] for i in missing], self.mode)
            self.model_calls += len(missing)
            for i, answer in zip(missing, answers, strict=False):
                found[i] = answer
                if self.cache and answer.raw != UNREADABLE:  # an overflow is asked again next time
                    self.cache.put(self.tag, keys[i], self.mode, first.key, second.key, answer)
        return found

    def _view(self, first: ClipRef, second: ClipRef) -> tuple[np.ndarray, str]:
        """The pair as one video, and the prompt's line saying how it was passed; the last pair is kept, as open
        mode joins it to propose and again to re-score."""
        if self._last is None or self._last[0] != (first.key, second.key):
            a, b = self.frames.get(first, self.spec), self.frames.get(second, self.spec)
            clip, n_a, n_b = self.reranker.pair_clip(a.pixels, b.pixels, prepared=True)
            self._last = ((first.key, second.key), (clip, video_description(n_a, n_b, *(self._rates(a, b) or
                                                                                        (None, None)))))
        return self._last[1]

    def _rates(self, first, second) -> tuple[float, float] | None:
        """Each clip's frame rate as sampled, when a fixed rate was asked for (one frame: the rate asked)."""
        if self.fps is None:
            return None
        return _sampled_rate(first.timestamps, self.fps), _sampled_rate(second.timestamps, self.fps)


def _sampled_rate(timestamps: np.ndarray, asked: float) -> float:
    """The rate the prompt states, as VidDiff's ``_subsample_video`` reports it: ``int(fps / stride)``, or the
    file's own rate when it is below the one asked (every frame kept)."""
    steps = np.diff(np.asarray(timestamps, dtype=np.float64))
    steps = steps[steps > 0]
    if not len(steps):
        return float(asked)
    measured = float(1.0 / np.median(steps))
    return float(int(measured + 1e-6)) if measured >= asked - 1e-6 else measured


def _combined(ab: PairScore, ba: PairScore | None) -> float | None:
    """P(video a) over the orders asked: (a, b)'s own, and 1 - P(first) of (b, a); the readable ones' mean."""
    values = [ab.score] + ([] if ba is None or ba.score is None else [1.0 - ba.score])
    readable = [v for v in values if v is not None]
    return float(np.mean(readable)) if readable else None


def _key(kind: str, text: str, *extra) -> str:
    # the question itself can be kilobytes long (the action, the statement, the open request): its digest names it
    body = "|".join([text, *map(str, extra)])
    return f"{kind}:{hashlib.sha256(body.encode()).hexdigest()[:32]}"


def _round(value: float | None) -> float | None:
    return None if value is None else round(float(value), 6)


def diff_pair(scorer: DiffScorer, a: ClipRef, b: ClipRef, shown: tuple[str, str], action: str,
              statements: Mapping[str, str] | None, most: int | None, max_new_tokens: int = OPEN_TOKENS
              ) -> DiffResult:
    """Closed mode with ``statements``, open mode with ``most`` (the largest number of differences to propose)."""
    if (statements is None) == (most is None):
        raise ValueError("give statements (closed mode) or a number of differences to propose (open mode)")
    before = scorer.model_calls, scorer.cached
    base = DiffResult(shown[0], shown[1], check_action(action), scorer.reranker.model_id, scorer.mode,
                      scorer.symmetric, scorer.spec.describe(), seen=scorer.seen(a, b))
    if statements is not None:
        verdicts = scorer.closed(a, b, action, statements)
        return replace(base, verdicts=tuple(verdicts), **_asked(scorer, before))
    answer, read = scorer.propose(a, b, action, most, max_new_tokens)
    verdicts = scorer.closed(a, b, action, {str(i): p.description for i, p in enumerate(read.items)})
    proposals = tuple(Proposal(p.description, p.video, v) for p, v in zip(read.items, verdicts, strict=False))
    return replace(base, proposals=proposals, answer=answer, problems=read.problems, **_asked(scorer, before))


def _asked(scorer: DiffScorer, before: tuple[int, int]) -> dict:
    """Model calls and cache hits since ``before`` (the scorer's counts then)."""
    return {"model_calls": scorer.model_calls - before[0], "cached": scorer.cached - before[1]}
