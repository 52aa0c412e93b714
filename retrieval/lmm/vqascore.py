"""VQAScore of clip pairs: a video LMM asked whether each clip shows the other's caption (ConViS-Bench Table 3).

For a pair (clip 1, caption 1), (clip 2, caption 2) the model is asked about clip 1 ``Is this figure showing
"<caption 2>"? Please answer yes or no.`` and about clip 2 ``Is this video showing "<caption 1>"? ...``
(``rerankers.prompts.vqascore``, the reference's strings); the pair's score is the mean of the two P("Yes")
(already a probability in [0, 1], no rescaling). Each question's answer is stored in the score cache, keyed by
the model's identity (``vqa_tag``), the clip's bytes and span, and a digest of the question, so a pair asked
again, or a clip asked the same question in another pair, costs no forward pass. Clips are decoded once per command with
the family's own frames (``FrameCache``).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Sequence

from rerankers.base import PairScore
from rerankers.prompts.vqascore import pair_questions, pair_score
from retrieval.core.signal_kinds import VQASCORE
from retrieval.lmm.cached_scores import CachedScores
from retrieval.lmm.clips import ClipRef, FrameCache

MODE = "yes"  # the score cache's mode column: a probability of "Yes", not a 1-5 answer


@dataclass(frozen=True)
class Captioned:
    """A clip and its caption (what the other clip of a pair is asked about)."""

    clip: ClipRef
    caption: str


def question_key(question: str) -> str:
    return hashlib.sha1(question.encode("utf-8")).hexdigest()[:20]


class VqaScorer:
    """VQAScore of pairs with one video LMM: cache first, the model for the rest, batched."""

    def __init__(self, model, cache: CachedScores | None, frames: FrameCache | None = None):
        self.model, self.cache, self.frames = model, cache, frames or FrameCache()
        self.questions_asked = 0  # forward passes' rows (cache misses), for reports and tests

    def score(self, pairs: Sequence[tuple[Captioned, Captioned]]) -> list[float | None]:
        """Each pair's VQAScore; None where either answer's logits were unreadable."""
        asks = [ask for a, b in pairs
                for ask in zip((a.clip, b.clip), pair_questions(a.caption, b.caption), strict=False)]
        answers = self._answers(list(dict.fromkeys(asks)))
        return [pair_score(answers[asks[2 * i]], answers[asks[2 * i + 1]]) for i in range(len(pairs))]

    def _answers(self, asks: list[tuple[ClipRef, str]]) -> dict[tuple[ClipRef, str], float | None]:
        tag = self.model.vqa_tag
        found = {ask: self._cached(tag, *ask) for ask in asks}
        missing = [ask for ask, value in found.items() if value is None]
        if missing:
            spec = self.model.frame_spec  # the family's frames, decoded at its size
            videos = [self.frames.get(clip, spec).pixels for clip, _ in missing]
            probabilities = self.model.yes_probabilities(videos, [q for _, q in missing], prepared=True)
            self.questions_asked += len(missing)
            for (clip, question), p in zip(missing, probabilities, strict=False):
                found[(clip, question)] = PairScore(p, MODE)
                # an unreadable answer (non-finite logits) is asked again next time, never kept
                if self.cache is not None and p is not None:
                    self.cache.put(tag, VQASCORE, MODE, clip.key, question_key(question), found[(clip, question)])
        return {ask: score.score for ask, score in found.items()}

    def _cached(self, tag: str, clip: ClipRef, question: str) -> PairScore | None:
        return self.cache.get(tag, VQASCORE, MODE, clip.key, question_key(question)) if self.cache else None
