"""Qwen3-VL-Reranker as a pair signal: the anchor as the query, the candidate as the document, P(yes) under an
instruction that names the concept (rerankers.prompts.yesno).

Its score is its own scale, a probability in [0, 1], not the paper's 1-5 rating (``PairScore.scale`` says so).
Frames as the reference feeds a frame list (QwenLM/Qwen3-VL-Embedding, src/models/qwen3_vl_reranker.py, through
qwen-vl-utils with ``image_patch_size=16``): at most 64 frames a video at 1 fps (convis: 8 a video, one a second),
each frame on the 32-px grid within [128, 768] tokens and the video's share of 10 x 768 tokens, no resize by the
processor; each video handed with its metadata, so the processor writes its ``<t seconds>`` timestamps.
"""

from __future__ import annotations

from dataclasses import replace
from typing import ClassVar, Iterable

import numpy as np

from rerankers.base import YES_PROBABILITY, NextToken, Pair, PairScore, RerankerError, check_mode
from rerankers.frames import as_video, prepare, resample
from rerankers.hf import HFVideoReranker, Release, register_checkpoints, single_token_id
from rerankers.prompts.yesno import NO_WORD, YES_WORD, YESNO_PROMPT_VERSION, pair_chat
from rerankers.qwen import QwenFilePixels
from rerankers.qwen3 import Qwen3VLReranker
from rerankers.sharing import sharing_key

# the reference's frame-list bounds (qwen3_vl_reranker.py; qwen-vl-utils' token counts, patches of 16 merged 2x2)
_FACTOR = 32
_MIN_TOKENS, _MAX_TOKENS = 128, 768
_TOTAL_PIXELS = 10 * _MAX_TOKENS * _FACTOR * _FACTOR
_FRAME_FACTOR = 2


def frame_pixels(n_frames: int) -> QwenFilePixels:
    """qwen-vl-utils' per-frame area for a frame list of ``n_frames`` under the reference's total pixels."""
    low = _MIN_TOKENS * _FACTOR * _FACTOR
    high = max(min(_MAX_TOKENS * _FACTOR * _FACTOR, _TOTAL_PIXELS / n_frames * _FRAME_FACTOR), int(low * 1.05))
    return QwenFilePixels(int(high), _FACTOR, low)


class Qwen3VLYesNoReranker(HFVideoReranker):
    layout = "qwen"
    model_classes = {"qwen3_vl": "Qwen3VLForConditionalGeneration"}
    scale = YES_PROBABILITY
    frames_per_video = 8
    frame_multiple = 2
    video_fps = 1.0  # one frame a second, as the reference samples a video
    fp16_safe = False
    size_text = ("full-size decode, torchvision bicubic to the 32-px grid within [128, 768] tokens a frame and the "
                 "video's share of 10 x 768 tokens (the reference's qwen-vl-utils bounds); each video its own size")
    dtype_text = "bf16 on GPUs that have it, else fp32; fp32 on CPU"
    caption_text: ClassVar[str] = "none: it scores pairs only"
    _video_inputs = Qwen3VLReranker._video_inputs

    @classmethod
    def card(cls) -> dict[str, str]:
        return {**super().card(), "frames": f"{cls.frames_per_video} a video, one a second; the anchor as the "
                "query, the candidate as the document", "score": "P(yes) in [0, 1], its own scale (not 1-5)"}

    def frame_resize(self) -> QwenFilePixels:
        return frame_pixels(self.frames_per_video)

    @property
    def cache_tag(self) -> str:
        return self._tag(f"prompt={YESNO_PROMPT_VERSION}") + sharing_key(self.share)

    def render_prompt(self, concept_words: str) -> str:
        return self.processor.apply_chat_template(pair_chat(concept_words), tokenize=False, add_generation_prompt=True)

    def score_pairs(self, pairs: Iterable[Pair], concept_words: str, mode: str = "expected", prepared: bool = False
                    ) -> list[PairScore]:
        """P(yes) for each (anchor, candidate), ``batch_size`` pairs a forward pass. ``expected``: the probability;
        ``greedy``: 1.0 where "yes" outscores "no", else 0.0. ``prepared`` as for ``Reranker.score_pairs``."""
        check_mode(mode)
        pairs = [(self._video(a, prepared), self._video(b, prepared)) for a, b in pairs]
        probs = self._fitted(lambda rows: self._yes_no(rows, concept_words), pairs)  # batch_size pairs a pass
        self.work.update(vision_calls=2 * len(pairs), pair_passes=len(pairs))
        return [self._pair_score(p, mode, a, b) for p, (a, b) in zip(probs, pairs, strict=True)]

    def _video(self, frames: np.ndarray, prepared: bool) -> np.ndarray:
        video = as_video(frames)
        return resample(video if prepared else prepare(video, self.frame_spec, "video"), self.frames_per_video,
                        self.frame_rule)

    def _pair_score(self, p: float | None, mode: str, a: np.ndarray, b: np.ndarray) -> PairScore:
        evidence = {"size": [list(a.shape[1:3]), list(b.shape[1:3])]}
        if p is None:
            return PairScore(None, mode, "non-finite logits", evidence=evidence, scale=self.scale)
        text = YES_WORD if p >= 0.5 else NO_WORD
        score = p if mode == "expected" else float(p >= 0.5)
        return replace(PairScore(score, mode, text, (p, 1.0 - p), evidence), scale=self.scale)

    def _yes_no(self, rows: list[Pair], concept_words: str) -> list[float | None]:
        """One forward pass: sigmoid(logit("yes") - logit("no")) at each row's last position."""
        import torch

        yes, no = (single_token_id(self.processor.tokenizer, word) for word in (YES_WORD, NO_WORD))
        videos, video_kwargs = self._video_inputs([v for pair in rows for v in pair])
        inputs = self.processor(text=[self.render_prompt(concept_words)] * len(rows), videos=videos, padding=True,
                                padding_side="left", return_tensors="pt", **video_kwargs)
        with torch.inference_mode():
            logits = self.model(**self._to_device(inputs), logits_to_keep=1).logits[:, -1].float()
        margin = logits[:, yes] - logits[:, no]
        return [float(p) if np.isfinite(p) else None for p in torch.sigmoid(margin).tolist()]

    def _next_tokens(self, clips: list[np.ndarray], concept_words: str) -> list[NextToken]:
        raise RerankerError(f"{self.name} reads P(yes) of two videos, not a 1-5 answer of one pair clip")

    def _generate_texts(self, clips: list[np.ndarray], prompt: str, max_new_tokens: int) -> list[str]:
        raise RerankerError(f"{self.name} scores pairs only: it does not describe videos")


# QwenLM/Qwen3-VL-Embedding README, "Reranking Model": MMEB-v2 video retrieval after reranking
_EVIDENCE = ("MMEB-v2 video retrieval {video} after reranking, against 53.6 for Qwen3-VL-Embedding-2B alone "
             "(QwenLM/Qwen3-VL-Embedding README); not in the paper")
register_checkpoints(Qwen3VLYesNoReranker, [
    Release("qwen3-vl-reranker", "Qwen/Qwen3-VL-Reranker-2B", aliases=("qwen3-vl-reranker-2b",), params=2.1,
            license="Apache-2.0", evidence=_EVIDENCE.format(video=53.2)),
    Release("qwen3-vl-reranker-8b", "Qwen/Qwen3-VL-Reranker-8B", params=8.8, license="Apache-2.0",
            evidence=_EVIDENCE.format(video=61.0)),
], description="Qwen3-VL-Reranker: P(yes) that the candidate shows the anchor's concept (its own 0-1 scale, "
               "not in the paper)")
