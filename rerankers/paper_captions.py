"""Captions as the ConViS-Bench reference wrote them: each family's caption-time frames, pixels and decoding.

The reference (benedettaliberatori/convisbench, commit b8fa4ef) released no captioning script; its model files'
``generate`` without a conditioned prompt (the request "Describe this video in detail.") and its released caption
files say how each family captioned:

* Qwen2.5-VL (``models/qwen2_vl_model.py``): the video file goes to qwen-vl-utils 0.0.10 with ``fps`` 1.0 and
  ``max_pixels`` 360*420 (frames: the "qwen-fps" rule of ``retrieval.core.sampling``; pixels:
  ``rerankers.qwen.QwenFilePixels``), the user turn is the video then the request under the template's default
  system message, and ``generate`` runs with the checkpoint's own generation config (its sampling settings kept).  The
  model file's ``max_new_tokens`` default is 256, but the released Qwen captions run to 1,024 tokens (several
  stop mid-sentence there): the captioning call passed 1024.
* InternVL2.5 (``models/internvl2_5_model.py``): 16 frames at segment midpoints, one 448x448 tile each, the
  question ``Frame1: <image>`` ... ``Frame16: <image>`` lines then the request under InternVL's system message;
  ``chat`` with ``do_sample=True`` and ``max_new_tokens=1024``, so sampled with the language model's default
  settings (temperature 1, top-k 50, top-p 1).
* LLaVA-OneVision (``models/llavaov_model.py``): 16 frames ``linspace`` over the clip, SigLIP's square, greedy
  (``do_sample=False``), 256 new tokens; the release has no LLaVA captions, this is its ``generate`` asked the
  caption request.
* mPLUG-Owl3 (``models/mplugowl3_model.py``; not run by convis): up to 16 frames (1 a second, then uniform),
  "<|video|>\\nDescribe this video.", greedy; its released captions stop at 512 new tokens.

A sampled caption is seeded (42, the seed of the reference's scripts) just before it is generated, and every
video is generated alone, as the reference did: a caption depends on its video, never on the order or the
company it was asked in.  The model runs in its family's paper precision (``rerankers.factory.create_for_protocol``:
LLaVA fp16, Qwen2.5-VL and InternVL bf16, on a GPU), and a stored caption is keyed by the precision it was written in.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from rerankers.frames import as_video, pad_to_multiple, prepare
from rerankers.prompts.describe import DESCRIBE_PROMPT_VERSION
from retrieval.core.sampling import FrameSpec

GREEDY = "greedy"  # do_sample=False over the checkpoint's generation config
CHECKPOINT = "checkpoint"  # the checkpoint's generation config as it is (it may sample: seeded)
SAMPLED = "sampled"  # do_sample=True with the rule's sampling settings (seeded)
DECODINGS = (GREEDY, CHECKPOINT, SAMPLED)

SEED = 42  # what the reference's scripts seed torch with (set_all_seeds(42))
GENERATE_TOKENS = 256  # the max_new_tokens default of the reference's Qwen and LLaVA generate()
CHAT_TOKENS = 1024  # InternVL's generate() default, and what the released Qwen captions ran to
# transformers' defaults: the reference's InternVL language model sampled with them (chat() passes no config)
DEFAULT_SAMPLING = (("temperature", 1.0), ("top_k", 50), ("top_p", 1.0), ("typical_p", 1.0),
                    ("repetition_penalty", 1.0), ("no_repeat_ngram_size", 0))


@dataclass(frozen=True)
class CaptionRule:
    """How a family captions one video under the paper protocol: which frames at what size, how many new tokens
    the caption may take, and how it decodes (``DECODINGS``; ``sampling``: generation settings of SAMPLED)."""

    frames: FrameSpec
    tokens: int
    decoding: str = GREEDY
    sampling: tuple[tuple[str, float], ...] = ()
    seed: int = SEED

    def __post_init__(self):
        if self.decoding not in DECODINGS:
            raise ValueError(f"unknown decoding {self.decoding!r}; use one of {', '.join(DECODINGS)}")
        if self.tokens < 1:
            raise ValueError("a caption needs at least one new token")

    def describe(self) -> str:
        """Everything of the rule a stored caption depends on, for its cache key."""
        size = self.frames.resize.describe() if self.frames.resize is not None else "fast"
        how = ",".join([self.decoding, *(f"{name}={value:g}" for name, value in self.sampling)])
        return f"frames={self.frames.describe()}|size={size}|decode={how}|seed={self.seed}|tokens={self.tokens}"


class PaperCaptioner:
    """A reranker family captioning as the reference did (a ``retrieval.lmm.captioning.Describer``): the rule's
    frames and pixels, one video a generation, its decoding seeded, the caption request given the rule's budget."""

    batch_size = 1  # the reference generated one video at a time; a sampled row never shares a generation

    def __init__(self, model, rule: CaptionRule):
        self.model, self.rule = model, rule
        self.model_id, self.revision = model.model_id, model.revision
        self.frame_spec = rule.frames
        self.caption_tokens = rule.tokens

    @property
    def describe_version(self) -> str:
        # "paper", the whole rule and the precision: a fast caption (the reranker's frames, greedy), or one written
        # in another precision, never stands in for these
        precision = str(getattr(self.model, "dtype", None)).removeprefix("torch.")
        return f"{DESCRIBE_PROMPT_VERSION}|paper|{self.rule.describe()}|dtype={precision}"

    def describe(self, frames: np.ndarray, prompt: str, max_new_tokens: int, prepared: bool = False) -> str:
        return self.describe_many([frames], prompt, max_new_tokens, prepared)[0]

    def describe_many(self, videos: Sequence[np.ndarray], prompt: str, max_new_tokens: int,
                      prepared: bool = False) -> list[str]:
        """``prepared``: decoded with ``frame_spec`` (used as they are); otherwise raw frames, taken and resized as
        the rule says (an array has no frame rate: a rate rule keeps the frames given)."""
        if max_new_tokens < 1:
            raise ValueError("max_new_tokens must be >= 1")
        return [self.model.generate_caption(self._clip(video, prepared), prompt, max_new_tokens, self.rule)
                for video in videos]

    def _clip(self, frames: np.ndarray, prepared: bool) -> np.ndarray:
        video = as_video(frames)
        if not prepared:
            video = prepare(video, self.frame_spec, "video")
        # a one-frame clip (qwen-vl-utils refuses it) is padded to the frames the model merges in time
        return pad_to_multiple(video, self.model.frame_multiple)

    def __repr__(self) -> str:
        return f"PaperCaptioner({self.model!r}, {self.rule.describe()!r})"
