"""What every reranker is: pairs of frame clips and a concept in, one 1-5 similarity per pair out."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

from rerankers.frames import concat_pair
from rerankers.prompt import ANSWER_TOKENS, PROMPT_VERSION, parse_score
from retrieval.registry import Registry, UnknownModelError

MODES = ("expected", "greedy")

Pair = tuple[np.ndarray, np.ndarray]


class RerankerError(RuntimeError):
    """A reranker cannot be built or cannot run on the given checkpoint."""


class RerankerUnavailable(RerankerError):
    """The weights are not on this machine (or not a checkpoint this family can load)."""


@dataclass(frozen=True)
class PairScore:
    """One pair's similarity under one concept.

    ``score`` is 1..5; in ``greedy`` mode it is the parsed answer, None when unreadable (never 0).
    ``raw`` is the decoded greedy next token (kept in both modes, for inspection).
    ``probs`` (``expected`` mode) is P("1")..P("5") renormalised over those five answers.
    """

    score: float | None
    mode: str
    raw: str = ""
    probs: tuple[float, ...] | None = None


@dataclass(frozen=True)
class NextToken:
    """What one forward pass says about the answer: the raw logits of "1".."5" and the greedy token."""

    answer_logits: np.ndarray  # shape (5,), in ANSWER_TOKENS order
    text: str  # the greedy next token, decoded without special tokens


def expected_score(answer_logits: Sequence[float]) -> tuple[float, tuple[float, ...]]:
    """Softmax over just the five answer logits; the score is the expectation of 1..5 under it."""
    logits = np.asarray(answer_logits, dtype=np.float64)
    if logits.shape != (len(ANSWER_TOKENS),) or not np.all(np.isfinite(logits)):
        raise ValueError(f"need {len(ANSWER_TOKENS)} finite answer logits, got {logits!r}")
    weights = np.exp(logits - logits.max())
    probs = weights / weights.sum()
    values = np.arange(1, len(ANSWER_TOKENS) + 1, dtype=np.float64)
    return float(probs @ values), tuple(float(p) for p in probs)


def to_pair_score(token: NextToken, mode: str) -> PairScore:
    check_mode(mode)
    if mode == "greedy":
        parsed = parse_score(token.text)
        return PairScore(None if parsed is None else float(parsed), mode, token.text)
    score, probs = expected_score(token.answer_logits)
    return PairScore(score, mode, token.text, probs)


def average_scores(ab: PairScore, ba: PairScore) -> PairScore:
    """Combine the (a, b) and (b, a) scores: the mean of the readable ones, None if neither is."""
    if ab.mode != ba.mode:
        raise ValueError(f"cannot average a {ab.mode} score with a {ba.mode} score")
    readable = [s for s in (ab.score, ba.score) if s is not None]
    score = float(np.mean(readable)) if readable else None
    probs = None
    if ab.probs is not None and ba.probs is not None:
        probs = tuple(float(x) for x in (np.asarray(ab.probs) + np.asarray(ba.probs)) / 2)
    return PairScore(score, ab.mode, f"{ab.raw} | {ba.raw}", probs)


def check_mode(mode: str) -> None:
    if mode not in MODES:
        raise ValueError(f"unknown scoring mode {mode!r}; use one of {', '.join(MODES)}")


class Reranker(ABC):
    """An LMM that rates how similar two videos are in terms of a concept (ConViS)."""

    name: str  # registry name, e.g. "qwen2.5-vl"
    source: str  # hub id or local folder the weights came from
    revision: str = "unknown"  # which weights exactly: hub commit or a hash of the local folder
    frames_per_video: int = 8  # per video; families and instances override
    batch_size: int = 4  # pairs per forward pass

    @property
    def model_id(self) -> str:
        """Stable identity of the model, stored with every score."""
        return f"{self.name}:{self.source}"

    @property
    def cache_tag(self) -> str:
        """Everything besides the pair, concept and mode that a cached score depends on."""
        return f"{self.model_id}@{self.revision}|prompt={PROMPT_VERSION}|frames={self.frames_per_video}"

    def score_pairs(
        self, pairs: Iterable[Pair], concept_words: str, mode: str = "expected"
    ) -> list[PairScore]:
        """``pairs[i] = (frames_a, frames_b)``, each (T, H, W, 3) uint8 RGB.

        Clips with a frame count other than ``frames_per_video`` are resampled (reference index
        formula, padding by repetition).  ``mode="expected"`` is the expectation of the answer
        distribution over "1".."5"; ``mode="greedy"`` parses the single greedy token as the
        reference does.
        """
        check_mode(mode)
        pairs = list(pairs)
        scores: list[PairScore] = []
        for start in range(0, len(pairs), max(1, self.batch_size)):
            batch = pairs[start : start + max(1, self.batch_size)]
            # build clips one batch at a time: 32 full-size frames a pair add up quickly
            clips = [concat_pair(a, b, self.frames_per_video) for a, b in batch]
            tokens = self._next_tokens(clips, concept_words)
            scores.extend(to_pair_score(t, mode) for t in tokens)
        return scores

    def score_pairs_symmetric(
        self, pairs: Iterable[Pair], concept_words: str, mode: str = "expected"
    ) -> list[PairScore]:
        """Score (a, b) and (b, a) and average them (the LMM is not symmetric in the order)."""
        pairs = list(pairs)
        both = self.score_pairs(pairs + [(b, a) for a, b in pairs], concept_words, mode)
        return [average_scores(ab, ba) for ab, ba in zip(both[: len(pairs)], both[len(pairs) :])]

    @abstractmethod
    def _next_tokens(self, clips: list[np.ndarray], concept_words: str) -> list[NextToken]:
        """One batch: each clip is (2 * frames_per_video, H, W, 3), video 1's frames first."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.model_id!r}, revision={self.revision!r})"


RERANKERS: Registry[Reranker] = Registry("reranker")


def create_reranker(spec: str, device: str | None = None, dtype=None, **kwargs) -> Reranker:
    """Build a reranker from a name (``qwen2.5-vl``), ``name:source``, a hub id or a local folder.

    Raises UnknownModelError for a spec no family claims and RerankerUnavailable when the
    weights are not on this machine; both carry a one-line message.
    """
    _load_builtin()
    _check_local_spec(spec)
    return RERANKERS.create(spec, device=device, dtype=dtype, **kwargs)


def _check_local_spec(spec: str) -> None:
    # a bare path the registry cannot open would otherwise read as an "unknown reranker"
    text = spec.strip()
    if text.startswith(("/", "./", "../", "~")) and not Path(text).expanduser().is_dir():
        raise RerankerUnavailable(f"no weights folder at {text!r}")


def available_rerankers() -> list[str]:
    _load_builtin()
    return RERANKERS.names()


def _load_builtin() -> None:
    # importing the family modules registers them; lazily, so `import rerankers` stays cheap
    import rerankers.internvl  # noqa: F401
    import rerankers.llava  # noqa: F401
    import rerankers.qwen  # noqa: F401

