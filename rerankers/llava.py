"""LLaVA-OneVision and LLaVA-Video as ConViS rerankers (transformers ``llava_onevision`` checkpoints).

As the reference (``encode_concat_video_LLavaOV`` + ``models/llavaov_model.py``): 16 frames a
video spread over the whole clip (``np.linspace(0, n-1, 16, dtype=int)``), each decoded at full
size and resized (bicubic) straight to the SigLIP processor's square (384x384), the 32 frames
given to the model as one video (``modalities=["video"]``: pooled frame features and one newline
token), the llava ``qwen_1_5`` chat with its default system message,
and the user turn "<video>\\n" + the concept prompt.

LLaVA-Video-7B-Qwen2 was released only as an original LLaVA-NeXT checkpoint
(``lmms-lab/LLaVA-Video-7B-Qwen2``, model_type "llava"), which transformers cannot load.  It has
the LLaVA-OneVision architecture, so a conversion to ``llava_onevision`` (hub
``llava-hf/LLaVA-Video-7B-Qwen2-hf``, or a folder written by transformers'
``convert_llava_onevision_weights_to_hf.py``) is what ``llava-video`` loads.  The original
checkpoint gives a clear "cannot load" error.  The conversion does not keep LLaVA-Video's layout of
visual tokens (``LLAVA_VIDEO_LAYOUT``), so ``--protocol paper`` refuses ``llava-video``, also as
``llava-onevision:`` with its weights (``rerankers.factory.paper_refusal``).

The reference ran every LLaVA model in float16 (``paper_dtype``), the paper protocol's precision on a GPU, for
captions, VQAScore and concept scores alike.
"""

from __future__ import annotations

import copy
import inspect
from collections import Counter, OrderedDict
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from rerankers.base import NextToken
from rerankers.frames import resize_video
from rerankers.hf import HFVideoReranker, Release, register_checkpoints

# how transformers' LlavaOnevision turns a video's frames into visual tokens
VIDEO_TOKENS = "each frame's features pooled 2x2 (bilinear), then one newline token after the whole video"

# How many videos' pooled features, and how many anchors' prefix key/values, a reranker keeps: a query's anchor
# and its candidates are reused by every concept asked of them, and a new query's videos push out the oldest.
FEATURE_CACHE = 64
PREFIX_CACHE = 4


@dataclass(frozen=True)
class PairLayout:
    """Where a pair's tokens go: video 1's end splits what is shared (system, video 1) from what is not
    (video 2, its newline, the concept prompt, the assistant start)."""

    ids: Any  # (1, L) input ids of the whole pair, the video placeholder expanded
    split: int  # the first token after video 1's frames
    per_video: int  # pooled frame tokens of one video
    video2: Any  # (1, L) bool: video 2's tokens (its frames and the newline that ends the whole video)
    size: tuple[int, int]  # (height, width) of video 1's frames, which video 2's are resized to


class LlavaReranker(HFVideoReranker):
    """LLaVA-OneVision and LLaVA-Video (llava_onevision weights), fed as the reference's load_video feeds them."""

    layout = "llava"
    model_classes = {"llava_onevision": "LlavaOnevisionForConditionalGeneration"}
    size_text = f"{HFVideoReranker.size_text} (384x384 SigLIP square for the default weights)"
    frame_rule = "linspace"
    # LLaVA-NeXT's load_pretrained_model loads in float16 and the reference casts the pixels with .half();
    # t2v_metrics' VQAScore loads LLaVA-OneVision-7B the same way
    paper_dtype = "fp16"
    paper_dtype_source = "as LLaVA-NeXT ran it"
    pooling_text = f"{VIDEO_TOKENS} (LLaVA-NeXT's mm_newline_position 'one_token', LLaVA-OneVision's video layout)"
    caption_text: ClassVar[str] = (
        "fast: its 16 reranking frames, greedy, 256 new tokens, batched; paper: the same frames, greedy, 256 new "
        "tokens (the reference's generate(); it released no LLaVA captions), one video at a time")

    # -- one anchor against many candidates: video 1 encoded once, the text up to its end run once -------
    def _shared_tokens(self, anchor: np.ndarray, candidates: list[np.ndarray], concept_words: str
                       ) -> list[NextToken] | None:
        """What ``_next_tokens`` gives for ``concat_pair(anchor, c)`` of each candidate, computed once for the anchor.

        Each frame goes through the vision tower, projector and 2x2 pooling alone, and the one newline token
        follows the whole video, so video 1's features are the first half of the pair's and video 2's (with
        the newline) the rest. The concept prompt comes after the video, so the prefix (system, video 1) is the
        same for every concept: its key/values are kept per anchor. None: the videos differ in frame count.
        """
        import torch

        if not candidates:
            return []
        if any(len(c) != len(anchor) for c in candidates):
            return None
        with torch.inference_mode():
            layout = self._pair_layout(self.render_prompt(concept_words), anchor)
            if layout is None:
                return None
            # one row: out of GPU memory here says so as a batch of one pair does
            prefix = self._fitted(lambda rows: [self._prefix(rows[0], layout)], [anchor])[0]
            return self._fitted(lambda batch: self._suffix_answers(prefix, layout, batch), candidates)

    def _pair_layout(self, prompt: str, anchor: np.ndarray) -> PairLayout | None:
        """The pair's input ids as the processor makes them: its video placeholder expanded to both videos' pooled
        frame tokens and the newline. None where the prompt does not hold exactly one placeholder."""
        token, token_id = self.processor.video_token, self.model.config.video_token_id
        if prompt.count(token) != 1:
            return None
        size = anchor.shape[1:3]
        per_video = self._video_features(anchor, size).shape[1] - 1  # pooled frame tokens, the newline left out
        text = prompt.replace(token, token * (2 * per_video + 1))
        ids = self.processor.tokenizer([text], return_tensors="pt")["input_ids"].to(self.device)
        where = (ids[0] == token_id).nonzero().flatten()
        if len(where) != 2 * per_video + 1 or int(where[-1] - where[0]) != 2 * per_video:
            return None  # the tokenizer merged or split the placeholder: not the layout read here
        split = int(where[0]) + per_video
        video2 = ids == token_id
        video2[:, :split] = False
        return PairLayout(ids, split, per_video, video2, size)

    def _prefix(self, anchor: np.ndarray, layout: PairLayout):
        """Key/values of the system turn and video 1 (the anchor), run once and kept for its later concepts."""
        ids = layout.ids[:, :layout.split]
        cache = self._cached("_prefix_cache")
        key = (id(anchor), self.cache_tag, tuple(ids[0].tolist()))
        hit = cache.get(key)
        if hit is not None and hit[0] is anchor:
            cache.move_to_end(key)
            return hit[1]
        video1 = ids == self.model.config.video_token_id
        embeds = self._merged(ids, video1, self._video_features(anchor, layout.size)[:, :layout.per_video])
        out = self.model(inputs_embeds=embeds, use_cache=True, logits_to_keep=1)
        self._count("prefix_passes")
        kv = getattr(out, "cache", None)
        kv = out.past_key_values if kv is None else kv
        _remember(cache, key, (anchor, kv), PREFIX_CACHE)
        return kv

    def _suffix_answers(self, prefix, layout: PairLayout, candidates: list[np.ndarray]) -> list[NextToken]:
        """One generation step for the candidates as video 2, continuing the prefix's key/values (positions go
        on after it, every row the same length, so no padding)."""
        import torch

        rows = len(candidates)
        ids = layout.ids.expand(rows, -1)
        size = layout.size
        features = torch.cat([self._video_features(c, size) for c in candidates])
        # generate reads only the embeddings past the cached prefix; video 1's positions there stay unfilled
        embeds = self._merged(ids, layout.video2.expand(rows, -1), features)
        kv = copy.deepcopy(prefix)
        kv.batch_repeat_interleave(rows)
        out = self.model.generate(input_ids=ids, inputs_embeds=embeds, attention_mask=torch.ones_like(ids),
                                  generation_config=self._generation_config, **{self._cache_argument(): kv})
        self._count("pair_passes", rows)
        return self._generated_answers(out)

    def _merged(self, ids, where, features):
        """Token embeddings of ``ids`` with ``features`` put at the ``where`` positions, row by row, as the model
        merges video features into its inputs."""
        embeds = self.model.get_input_embeddings()(ids)
        return embeds.masked_scatter(where[..., None], features.to(embeds.dtype))

    def _video_features(self, frames: np.ndarray, size: tuple[int, int]):
        """(1, pooled frame tokens + 1, D): one video's projected, pooled frame features and the newline token,
        its frames first resized to ``size`` as concat_pair resizes video 2; one vision-tower call, kept for as
        long as the video stays among the recent ones."""
        cache = self._cached("_feature_cache")
        key = (id(frames), self.cache_tag, size)
        hit = cache.get(key)
        if hit is not None and hit[0] is frames:  # the frames are held, so their id is not another array's
            cache.move_to_end(key)
            return hit[1]
        videos, video_kwargs = self._video_inputs([resize_video(frames, *size)])
        pixels = self.processor.video_processor(videos=videos, return_tensors="pt", **video_kwargs)
        out = self.model.get_video_features(self._to_device(pixels)["pixel_values_videos"])
        self._count("vision_calls")
        features = _with_newline(getattr(out, "pooler_output", out), self.model.model.image_newline)
        _remember(cache, key, (frames, features), FEATURE_CACHE)
        return features

    def _cache_argument(self) -> str:
        # transformers 5 renamed generate's past_key_values to cache
        return "cache" if "cache" in inspect.signature(self.model.forward).parameters else "past_key_values"

    def _cached(self, name: str) -> OrderedDict:
        if getattr(self, name, None) is None:
            setattr(self, name, OrderedDict())
        return getattr(self, name)

    def _count(self, what: str, n: int = 1) -> None:
        if getattr(self, "work", None) is None:
            self.work = Counter()
        self.work[what] += n


def _remember(cache: OrderedDict, key, value, size: int) -> None:
    cache[key] = value
    while len(cache) > size:
        cache.popitem(last=False)


# LLaVA-Video-7B-Qwen2 was trained (LLaVA-NeXT's ov_to_video recipe) with mm_newline_position "grid", which its
# config keeps: LLaVA-NeXT, as the paper ran it, ends every row of each frame's pooled features with a newline token.
# transformers' LlavaOnevision puts one newline after the whole video and has no setting for another layout.
LLAVA_VIDEO_LAYOUT = ("LLaVA-NeXT, as the paper ran it, ends every row of every frame's features with a newline "
                      "token for LLaVA-Video-7B-Qwen2 (mm_newline_position 'grid', as it was trained)")

# llava-video comes first: its claim must be tried before the broader llava_onevision one
CHECKPOINTS = [
    Release("llava-video", "llava-hf/LLaVA-Video-7B-Qwen2-hf", aliases=("llava-video-7b",), claims=("llava-video",),
            description="LLaVA-Video-7B-Qwen2 (converted to transformers' llava_onevision), 16 frames a video",
            params=8.0,
            pooling=f"{VIDEO_TOKENS}; {LLAVA_VIDEO_LAYOUT}, so scores differ from the paper's and --protocol paper "
                    "refuses this model",
            paper_refusal=f"llava-video: {LLAVA_VIDEO_LAYOUT}; transformers' LlavaOnevision adds one newline after "
                          "the whole video, so its scores are not the paper's; use --protocol fast"),
    Release("llava-onevision", "llava-hf/llava-onevision-qwen2-7b-ov-hf",
            aliases=("llava-ov", "llava-ov-7b", "llava-onevision-7b"), claims=("llava-onevision", "llava_onevision"),
            description="LLaVA-OneVision, 16 frames a video", params=8.0),
    Release("llava-onevision-0.5b", "llava-hf/llava-onevision-qwen2-0.5b-ov-hf", aliases=("llava-ov-0.5b",),
            description="LLaVA-OneVision 0.5B, 16 frames a video", params=0.9),
]
register_checkpoints(LlavaReranker, CHECKPOINTS)


def _with_newline(features, newline):
    """(1, tokens, D) video features ending with the newline token. transformers up to 5.17 appends it in the
    model's forward and later versions in ``get_video_features``: whichever ran, the newline ends the result once."""
    import torch

    last = features[0, -1]
    if torch.equal(last, newline.to(last)):
        return features
    return torch.cat([features, newline.to(features)[None, None, :]], dim=1)
