"""What every reranker is: pairs of frame clips and a concept in, one 1-5 similarity per pair out.

Besides that, one clip can be described (captions) or asked a yes/no question (P("Yes"), for VQAScore), and a
pair can be asked which of the two a statement fits more, or what differs between them (VidDiff).
"""

from __future__ import annotations

import copy
from abc import ABC, abstractmethod
from collections import Counter
from dataclasses import dataclass, replace
from typing import ClassVar, Iterable, Sequence

import numpy as np

from rerankers.frames import as_video, concat_pair, join_pair, prepare, resample, resize_video
from rerankers.paper_captions import CaptionRule, PaperCaptioner
from rerankers.prompts.describe import DESCRIBE_PROMPT_VERSION
from rerankers.prompts.diff import DIFF_PROMPT_VERSION, parse_letter
from rerankers.prompts.similarity import ANSWER_TOKENS, PROMPT_VERSION, parse_score
from rerankers.prompts.vqascore import VQA_PROMPT_VERSION
from rerankers.sharing import IdentityCache, anchor_runs, sharing_key
from retrieval.core.concepts import RATING, from_rating
from retrieval.core.errors import ConvisError
from retrieval.core.registry import Registry, UnknownModelError  # noqa: F401  (callers import it from here)
from retrieval.core.sampling import RULE_TEXT, FrameSpec

MODES = ("expected", "greedy")
YES_PROBABILITY = "P(yes)"  # a yes/no reranker's: the probability of "yes" against "no", in [0, 1]

Pair = tuple[np.ndarray, np.ndarray]


class RerankerError(ConvisError, RuntimeError):
    """A reranker cannot be built or cannot run on the given checkpoint."""

    exit_code, http_status = 2, 503  # a server's models are its setup, not the request: 503 like a busy index
    label = "model unavailable"


class RerankerUnavailable(RerankerError):
    """The weights are not on this machine (or not a checkpoint this family can load)."""

    exit_code = 1  # the command line was right: the machine lacks the model


@dataclass(frozen=True)
class PairScore:
    """One pair's similarity under one concept.

    ``score`` is 1..5; in ``greedy`` mode it is the parsed answer, None when unreadable (never 0).
    ``raw`` is the decoded greedy next token (kept in both modes, for inspection).
    ``probs`` (``expected`` mode) is P("1")..P("5") renormalised over those five answers.
    ``scale`` says which of those ``score`` is; a yes/no reranker's is P(yes) in [0, 1], its own scale.
    ``evidence`` says what the model saw: the pixel size it received and, when the frames came
    from a decoder, each video's frame numbers and timestamps.
    """

    score: float | None
    mode: str
    raw: str = ""
    probs: tuple[float, ...] | None = None
    evidence: dict | None = None
    scale: str = RATING  # what ``score`` is: a 1-5 rating, or a model's own P(yes) in [0, 1] (YES_PROBABILITY)

    @property
    def unit_score(self) -> float | None:
        """The score on the 0-1 scale every search score is on: a rating mapped, a probability as it is."""
        return self.score if self.scale == YES_PROBABILITY else from_rating(self.score)


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
    if not np.all(np.isfinite(token.answer_logits)):
        # an overflowing forward pass (fp16) costs this pair, read as unreadable, never the query
        return PairScore(None, mode, token.text or "non-finite logits")
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
    evidence = {"ab": ab.evidence, "ba": ba.evidence} if ab.evidence or ba.evidence else None
    return PairScore(score, ab.mode, f"{ab.raw} | {ba.raw}", probs, evidence)


@dataclass(frozen=True)
class LetterOdds:
    """What one forward pass says about a which-video question: P("a") and P("b") as the first answer token
    (softmax over the whole vocabulary, each letter's spellings summed; NaN when the logits were not finite)
    and the greedy token."""

    p_a: float
    p_b: float
    text: str
    finite: bool = True  # False: the forward pass overflowed for this row; the answer is unreadable in both modes


UNREADABLE = "non-finite logits"  # the raw answer of an overflowed row: never cached, asked again next time


def to_choice(odds: LetterOdds, mode: str) -> PairScore:
    """A which-video answer as a PairScore: ``score`` is P(video a), ``probs`` the raw (P(a), P(b)).

    expected: P(a) / (P(a) + P(b)); greedy: 1.0 for a parsed "a", 0.0 for "b", None when unreadable.
    """
    check_mode(mode)
    if not odds.finite:
        return PairScore(None, mode, UNREADABLE)
    if mode == "greedy":
        letter = parse_letter(odds.text)
        return PairScore(None if letter is None else float(letter == "a"), mode, odds.text)
    mass = odds.p_a + odds.p_b
    if not (np.isfinite(mass) and mass > 0):
        return PairScore(None, mode, UNREADABLE)
    return PairScore(float(odds.p_a / mass), mode, odds.text, (float(odds.p_a), float(odds.p_b)))


def check_mode(mode: str) -> None:
    if mode not in MODES:
        raise ValueError(f"unknown scoring mode {mode!r}; use one of {', '.join(MODES)}")


class Reranker(ABC):
    """An LMM that rates how similar two videos are in terms of a concept (ConViS)."""

    name: str  # registry name, e.g. "qwen2.5-vl"
    source: str  # hub id or local folder the weights came from
    revision: str = "unknown"  # which weights exactly: hub commit or a hash of the local folder
    frames_per_video: int = 8  # per video; families and instances override
    frame_rule: ClassVar[str] = "per-second"  # retrieval.core.sampling rule the family's reference uses
    frame_multiple: ClassVar[int] = 1  # frames the model merges in time (Qwen: 2); a pair's videos are padded to it
    size_text: ClassVar[str] = "decoder-scaled to short side 256"  # the decode size, in words
    dtype_text: ClassVar[str] = "bf16 on GPUs that have it, else fp16; fp32 on CPU"
    # the precision the paper's reference ran the family in, on its GPUs ("fp16", "bf16"; None: not in the paper)
    paper_dtype: ClassVar[str | None] = None
    paper_dtype_source: ClassVar[str] = ""  # who ran it so, for the card: "as LLaVA-NeXT ran it"
    pooling_text: ClassVar[str] = "-"  # how frame features become the model's visual tokens, in words
    # how the family captions (``captioner``), in words: convis's default, then the paper protocol's
    caption_text: ClassVar[str] = "fast: its reranking frames, greedy, 256 new tokens"
    scale: ClassVar[str] = RATING  # what its pair scores are (PairScore.scale)
    batch_size: int = 4  # pairs per forward pass
    # pairs with one anchor share its vision output and the prompt prefix (``_shared_tokens``); False: every pair
    # is one whole forward pass, as the paper's reference asked (``--protocol paper``, ``--no-share``)
    share: bool = True
    shared_cache_size: ClassVar[int] = 128  # videos whose resized frames and vision outputs are kept for reuse

    @classmethod
    def card(cls) -> dict[str, str]:
        """What the family feeds its model, for ``convis models`` (no weights needed)."""
        return {"frames": f"{cls.frames_per_video} a video: {RULE_TEXT[cls.frame_rule]}; video 1's then video 2's",
                "size": cls.size_text, "pooling": cls.pooling_text, "dtype": cls.dtype_card(),
                "captions": cls.caption_text}

    @classmethod
    def dtype_card(cls) -> str:
        """The card's precision line: the paper protocol's, where the paper ran the family, then the usual rule."""
        if cls.paper_dtype is None:
            return cls.dtype_text
        source = f" ({cls.paper_dtype_source})" if cls.paper_dtype_source else ""
        return f"{cls.paper_dtype} under --protocol paper on a GPU{source}; otherwise {cls.dtype_text}"

    def asked_with(self, frames_per_video: int | None = None, batch_size: int | None = None,
                   share: bool | None = None) -> Reranker:
        """This model asked with another frame count, batch size or prompt sharing (None keeps this one's):
        itself when none differs, else a copy that shares its loaded weights, so a run that asks one model several
        ways holds it once in memory."""
        frames = self.frames_per_video if frames_per_video is None else frames_per_video
        batch = self.batch_size if batch_size is None else max(1, int(batch_size))
        shared = self.share if share is None else bool(share)
        if frames < 1:
            raise ValueError("frames_per_video must be >= 1")
        if (frames, batch, shared) == (self.frames_per_video, self.batch_size, self.share):
            return self
        other = copy.copy(self)  # the weights, processor and notices are shared, the settings are the copy's
        other.frames_per_video, other.batch_size, other.share = frames, batch, shared
        return other

    @property
    def frame_spec(self) -> FrameSpec:
        """Which frames of each video the model sees, and at what size they are decoded."""
        return FrameSpec(self.frame_rule, self.frames_per_video, self.frame_resize())

    def frame_resize(self):
        """The decode-size policy (retrieval.core.pixels) the family's preprocessing needs; None = fast default."""
        return None

    @property
    def model_id(self) -> str:
        """Stable identity of the model, stored with every score."""
        return f"{self.name}:{self.source}"

    @property
    def cache_tag(self) -> str:
        """Everything besides the pair, concept and mode that a cached score depends on."""
        return self._tag(f"prompt={PROMPT_VERSION}") + sharing_key(self.share)

    @property
    def vqa_tag(self) -> str:
        """Everything besides the clip and the question that a cached VQAScore depends on."""
        return self._tag(f"vqa={VQA_PROMPT_VERSION}")

    def _tag(self, prompt: str) -> str:
        spec = self.frame_spec
        size = spec.resize.describe() if spec.resize is not None else "fast"
        return f"{self.model_id}@{self.revision}|{prompt}|frames={spec.rule}:{spec.count}|size={size}"

    def score_pairs(
        self, pairs: Iterable[Pair], concept_words: str, mode: str = "expected", prepared: bool = False
    ) -> list[PairScore]:
        """``pairs[i] = (frames_a, frames_b)``, each (T, H, W, 3) uint8 RGB.

        ``prepared``: the frames were decoded with ``frame_spec`` (right frames, right size) and are
        used as they are. Otherwise they are raw frames: resampled with the family's rule and
        resized as the family's preprocessing resizes full-size frames.  ``mode="expected"`` is
        the expectation of the answer distribution over "1".."5"; ``mode="greedy"`` parses the
        single greedy token as the reference does.  Consecutive pairs with the same video 1 (the
        same array) share its vision output and the prompt prefix where the family can (``share``); a pair
        alone with its video 1 is scored whole, batched with its neighbours, which gains it more than sharing
        with no other pair would.
        """
        check_mode(mode)
        pairs = list(pairs)
        scores: list[PairScore] = []
        alone: list[Pair] = []  # pairs to score whole, in order, before the next shared run's scores
        for start, stop in anchor_runs(pairs):
            run = pairs[start:stop]
            shared = self._scored_shared(run, concept_words, mode, prepared) if self.share and len(run) > 1 else None
            if shared is None:
                alone.extend(run)
                continue
            scores.extend(self._scored_alone(alone, concept_words, mode, prepared) + shared)
            alone = []
        return scores + self._scored_alone(alone, concept_words, mode, prepared)

    def _scored_shared(self, pairs: list[Pair], concept_words: str, mode: str, prepared: bool
                       ) -> list[PairScore] | None:
        """Pairs of one anchor scored through ``_shared_tokens`` (None: the family cannot share them).

        Video 1 and each video 2 are brought to what ``concat_pair`` would put in the clip; a resized video 2 is
        kept (by the identity of its frames and the size), so the next concept hands the family the same array."""
        a, b = (pairs[0][0], [b for _, b in pairs]) if prepared else self._prepared(pairs)
        anchor = resample(as_video(a, "video 1"), self.frames_per_video, self.frame_rule)
        size = tuple(anchor.shape[1:3])
        candidates = [self._resized(resample(as_video(v, "video 2"), self.frames_per_video, self.frame_rule), size)
                      for v in b]
        tokens = self._shared_tokens(anchor, candidates, concept_words)
        if tokens is None:
            return None
        return [replace(to_pair_score(t, mode), evidence={"size": list(size)}) for t in tokens]

    def _prepared(self, pairs: list[Pair]) -> tuple[np.ndarray, list[np.ndarray]]:
        spec = self.frame_spec
        return prepare(pairs[0][0], spec, "video 1"), [prepare(b, spec, "video 2") for _, b in pairs]

    def _resized(self, frames: np.ndarray, size: tuple[int, int]) -> np.ndarray:
        if tuple(frames.shape[1:3]) == size:
            return frames
        return self._shared_cache("resized").get(frames, size, lambda: resize_video(frames, *size))

    def _shared_cache(self, what: str) -> IdentityCache:
        """This model's cache of ``what`` (made at first use; a copy from ``asked_with`` shares it)."""
        caches = self.__dict__.setdefault("_shared_caches", {})
        if what not in caches:
            caches[what] = IdentityCache(self.shared_cache_size)
        return caches[what]

    @property
    def work(self) -> Counter:
        """Model work since construction: "vision_calls" (video halves through the vision tower),
        "prefix_passes" (forward passes over a shared prompt prefix), "pair_passes" (rows of forward passes that
        answer a pair); a unit's questions decoded after one pass over its video (rerankers.unit_prefix) add
        "unit_batches" (such decodings) and "new_tokens" (the tokens they wrote)."""
        return self.__dict__.setdefault("_work", Counter())

    def _shared_tokens(self, anchor: np.ndarray, candidates: list[np.ndarray], concept_words: str
                       ) -> list[NextToken] | None:
        """What ``_next_tokens([concat_pair(anchor, c, ...) for c in candidates], concept_words)`` returns, with the
        anchor's vision output and the prompt up to the end of its frames computed once and shared by the
        candidates. ``anchor``: video 1's frames as the clip holds them; ``candidates``: each video 2's, already
        resampled and resized to the anchor's size. None: this family (or this call) cannot share; the pairs then
        go through ``_next_tokens``."""
        return None

    def _scored_alone(self, pairs: list[Pair], concept_words: str, mode: str, prepared: bool) -> list[PairScore]:
        """Each pair as one whole clip, ``batch_size`` clips a forward pass."""
        scores: list[PairScore] = []
        while len(scores) < len(pairs):
            # the batch size is read each time: running out of GPU memory can lower it mid-way
            batch = pairs[len(scores) : len(scores) + max(1, self.batch_size)]
            # build clips one batch at a time: 32 full-size frames a pair add up quickly
            clips = [self._clip(a, b, prepared) for a, b in batch]
            tokens = self._next_tokens(clips, concept_words)
            self.work.update(vision_calls=2 * len(clips), pair_passes=len(clips))  # both halves of every clip
            scores.extend(replace(to_pair_score(t, mode), evidence={"size": list(c.shape[1:3])})
                          for t, c in zip(tokens, clips, strict=False))
        return scores
    def _clip(self, a: np.ndarray, b: np.ndarray, prepared: bool) -> np.ndarray:
        if not prepared:
            spec = self.frame_spec
            a, b = prepare(a, spec, "video 1"), prepare(b, spec, "video 2")
        return concat_pair(a, b, self.frames_per_video, self.frame_rule)

    @abstractmethod
    def _next_tokens(self, clips: list[np.ndarray], concept_words: str) -> list[NextToken]:
        """One batch: each clip is (2 * frames_per_video, H, W, 3), video 1's frames first."""

    # -- describing one clip (index-time captions) --------------------------------------------------
    caption_tokens: int | None = None  # new tokens of the caption request (None: rerankers.prompts.describe's)

    def captioner(self, protocol: str = "fast"):
        """Who captions with this model under ``protocol``: the model itself as it reranks ("fast": its frames,
        greedy, batched) or as the ConViS-Bench reference captioned ("paper": ``rerankers.paper_captions``)."""
        if protocol == "fast":
            return self
        if protocol == "paper":
            return PaperCaptioner(self, self.paper_caption_rule())
        raise ValueError(f"unknown protocol {protocol!r}; use fast or paper")

    def paper_caption_rule(self) -> CaptionRule:
        """The reference's caption-time frames, pixels, decoding and token budget for this family."""
        raise RerankerError(f"{self.name} has no captioning rule of the reference")

    def generate_caption(self, clip: np.ndarray, prompt: str, max_new_tokens: int, rule: CaptionRule) -> str:
        """The answer to ``prompt`` about one prepared clip, decoded as ``rule`` says (``PaperCaptioner``)."""
        raise RerankerError(f"{self.name} cannot describe videos")

    @property
    def describe_version(self) -> str:
        """Everything besides the model and the unit that a stored description depends on."""
        spec = self.frame_spec
        return f"{DESCRIBE_PROMPT_VERSION}|frames={spec.rule}:{spec.count}"

    def describe(self, frames: np.ndarray, prompt: str, max_new_tokens: int, prepared: bool = False) -> str:
        """The model's greedy answer to ``prompt`` about one video, (T, H, W, 3) uint8 RGB.

        ``prepared``: decoded with ``frame_spec`` already (used as they are); otherwise resampled
        with the family's rule and resized as its preprocessing resizes full-size frames.
        """
        return self.describe_many([frames], prompt, max_new_tokens, prepared)[0]

    def describe_many(self, videos: Sequence[np.ndarray], prompt: str, max_new_tokens: int,
                      prepared: bool = False) -> list[str]:
        """``describe`` for several videos, ``batch_size`` of them a generation where the family batches."""
        if max_new_tokens < 1:
            raise ValueError("max_new_tokens must be >= 1")
        clips = [self._one_clip(frames, prepared) for frames in videos]
        size = max(1, self.batch_size)
        return [text for start in range(0, len(clips), size)
                for text in self._generate_texts(clips[start:start + size], prompt, max_new_tokens)]

    def _one_clip(self, frames: np.ndarray, prepared: bool) -> np.ndarray:
        """One video as the model sees it alone: the family's frames of it, at its size."""
        video = as_video(frames)
        if not prepared:
            video = prepare(video, self.frame_spec, "video")
        return resample(video, self.frames_per_video, self.frame_rule)

    def _generate_texts(self, clips: list[np.ndarray], prompt: str, max_new_tokens: int) -> list[str]:
        """One answer a clip; a family that can batch generation overrides this."""
        return [self._generate_text(clip, prompt, max_new_tokens) for clip in clips]

    def _generate_text(self, clip: np.ndarray, prompt: str, max_new_tokens: int) -> str:
        raise RerankerError(f"{self.name} cannot describe videos")

    # -- yes/no questions about one clip (VQAScore) ---------------------------------------------------
    def yes_probabilities(self, videos: Sequence[np.ndarray], questions: Sequence[str],
                          prepared: bool = False) -> list[float | None]:
        """P("Yes") as the first answer token, for each video (T, H, W, 3) uint8 RGB asked its own question.

        The probability is the softmax over the whole vocabulary (rerankers.prompts.vqascore).  Videos are
        prepared as ``describe`` prepares them; ``batch_size`` of them go in a forward pass.  A video
        whose logits are not finite gets None (and a line in the notices), never an exception.
        """
        videos, questions = list(videos), [str(q) for q in questions]
        if len(videos) != len(questions):
            raise ValueError(f"{len(videos)} videos but {len(questions)} questions; need one question a video")
        if any(not q.strip() for q in questions):
            raise ValueError("a question is empty")
        probs: list[float | None] = []
        while len(probs) < len(videos):
            # the batch size is read each time: running out of GPU memory can lower it mid-way
            start, stop = len(probs), len(probs) + max(1, self.batch_size)
            # build clips one batch at a time, as score_pairs does
            clips = [self._one_clip(frames, prepared) for frames in videos[start:stop]]
            probs.extend(self._yes_probabilities(clips, questions[start:stop]))
        return probs

    def _yes_probabilities(self, clips: list[np.ndarray], questions: list[str]) -> list[float | None]:
        """One batch: each clip is (frames_per_video, H, W, 3), asked the question at its index."""
        raise RerankerError(f"{self.name} cannot answer yes/no questions")

    # -- telling two clips apart (VidDiff) -------------------------------------------------------------
    def diff_tag(self, spec: FrameSpec) -> str:
        """Everything besides the clips, the question and the mode that a cached which-video answer depends on."""
        size = spec.resize.describe() if spec.resize is not None else "fast"
        return f"{self.model_id}@{self.revision}|diff={DIFF_PROMPT_VERSION}|frames={spec.describe()}|size={size}"

    def pair_clip(self, frames_a: np.ndarray, frames_b: np.ndarray, prepared: bool = False
                  ) -> tuple[np.ndarray, int, int]:
        """The one video a pair goes in as: video a's frames then video b's, each padded to ``frame_multiple``.

        ``prepared``: decoded with the spec the caller chose (the family's, or a fixed rate), used as they are;
        otherwise raw frames, prepared with the family's rule and size. Returns (clip, frames of a, frames of b).
        """
        if not prepared:
            frames_a = prepare(frames_a, self.frame_spec, "video a")
            frames_b = prepare(frames_b, self.frame_spec, "video b")
        return join_pair(frames_a, frames_b, self.frame_multiple)

    def which_video(self, clips: Sequence[np.ndarray], questions: Sequence[str], mode: str = "expected"
                    ) -> list[PairScore]:
        """For each pair clip (``pair_clip``) and its question, which video the answer names (``to_choice``).

        ``batch_size`` clips go in a forward pass; a row whose logits are not finite scores None.
        """
        check_mode(mode)
        clips, questions = list(clips), [str(q) for q in questions]
        if len(clips) != len(questions):
            raise ValueError(f"{len(clips)} clips but {len(questions)} questions; need one question a clip")
        answers: list[PairScore] = []
        while len(answers) < len(clips):
            # the batch size is read each time: running out of GPU memory can lower it mid-way
            start, stop = len(answers), len(answers) + max(1, self.batch_size)
            odds = self._letter_odds(clips[start:stop], questions[start:stop])
            answers.extend(to_choice(o, mode) for o in odds)
        return answers

    def _letter_odds(self, clips: list[np.ndarray], questions: list[str]) -> list[LetterOdds]:
        raise RerankerError(f"{self.name} cannot answer which-video questions")

    def answer_about(self, clips: Sequence[np.ndarray], request: str, max_new_tokens: int) -> list[str]:
        """The greedy answer to ``request`` about each prepared clip (a pair clip included), as captions are made."""
        if max_new_tokens < 1:
            raise ValueError("max_new_tokens must be >= 1")
        clips, size = list(clips), max(1, self.batch_size)
        return [text for start in range(0, len(clips), size)
                for text in self._generate_texts(clips[start:start + size], request, max_new_tokens)]

    def answer_text(self, prompt: str, max_new_tokens: int) -> str:
        """The greedy answer to a text-only ``prompt`` (no video), in the family's chat: e.g. a judge's question."""
        raise RerankerError(f"{self.name} cannot answer text-only questions")

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.model_id!r}, revision={self.revision!r})"


RERANKERS: Registry[Reranker] = Registry("reranker")
