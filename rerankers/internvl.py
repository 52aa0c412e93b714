"""InternVL2.5 / InternVL3 as ConViS rerankers (transformers-native ``internvl`` checkpoints, "-hf").

As the reference (``encode_concat_video_InternVL`` + ``models/internvl2_5_model.py``): 16 frames
a video at the midpoints of 16 equal segments (``get_video_index``), each decoded at full size and
resized (bicubic) to one 448x448 tile (no thumbnail), the 32 frames introduced one per line as ``FrameN: <image>``
between the concept prompt and "Output a similarity score from 1 to 5.", under InternVL's own
system message.  The processor's video expansion writes exactly those ``FrameN:`` lines.  Captions under the
paper protocol sample as the reference's ``chat`` did (``paper_caption_rule``).

Pairs with one anchor share work (``_shared_tokens``): the vision tower encodes each frame on its own (InternViT,
pixel shuffle and projector act per image), so a video's frame features are computed once and reused by every pair
and concept it is in; and every pair at one frame count has the same prompt tokens, video 1's frame lines ending
where video 2's begin, so the prompt up to there is run once a concept and its key/value cache extended by each
candidate's frame lines, the request and the assistant turn.

The paper ran the remote-code checkpoints (``OpenGVLab/InternVL2_5-8B``, ``model_type``
"internvl_chat"); transformers loads only the converted "-hf" repositories, so those are the
defaults, and a remote-code checkpoint gives a clear "cannot load" error.  The reference's
InternVL generation sampled (``do_sample=True``); greedy mode here decodes greedily.
"""

from __future__ import annotations

import copy
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from rerankers.base import NextToken
from rerankers.frames import as_video, resample, resize_video
from rerankers.hf import HFVideoReranker, Release, register_checkpoints
from rerankers.paper_captions import CHAT_TOKENS, DEFAULT_SAMPLING, SAMPLED, CaptionRule


class InternVLReranker(HFVideoReranker):
    """InternVL3 / InternVL2.5 (transformers-native -hf weights), fed one tile a frame at the frames the
    reference's get_video_index picks (segment midpoints), each frame named in the prompt as the reference does."""

    layout = "internvl"
    model_classes = {"internvl": "InternVLForConditionalGeneration"}
    size_text = f"{HFVideoReranker.size_text} (448x448 for the default weights; one tile a frame, no thumbnail)"
    frame_rule = "midpoints"
    paper_dtype = "bf16"  # the reference's from_pretrained(torch_dtype=torch.bfloat16)
    paper_dtype_source = "as the reference loaded it"
    caption_text: ClassVar[str] = (
        "fast: its 16 reranking frames (one FrameK line each), greedy, 256 new tokens, batched; paper: the same "
        "frames, sampled as the reference's chat() (temperature 1, top-k 50, top-p 1; seeded 42 before each "
        "caption), 1024 new tokens, one video at a time")

    def paper_caption_rule(self) -> CaptionRule:
        """The reference's InternVL captions: its 16 frames, ``chat(do_sample=True, max_new_tokens=1024)`` with the
        language model's default sampling settings (rerankers.paper_captions)."""
        return CaptionRule(self.frame_spec, CHAT_TOKENS, SAMPLED, DEFAULT_SAMPLING)

    # -- pairs that share video 1 -------------------------------------------------------------------
    # videos whose frame features stay on the device for reuse (16 frames of the 8B model: about 29 MB each in bf16)
    shared_cache_size: ClassVar[int] = 64

    def _shared_tokens(self, anchor: np.ndarray, candidates: list[np.ndarray], concept_words: str
                       ) -> list[NextToken] | None:
        """What ``_next_tokens([concat_pair(anchor, c, ...) for c in candidates], concept_words)`` returns: the
        anchor's frame features and the prompt up to its last frame computed once, each candidate's frame features
        kept for the next concept. None when the prompt does not split there (concept words that spell a frame
        token)."""
        import torch

        if not candidates:
            return []
        video1 = resample(as_video(anchor, "video 1"), self.frames_per_video, self.frame_rule)
        # as concat_pair builds the clip; frames already prepared so are returned as they are (kept by identity)
        videos2 = [resize_video(resample(as_video(c, "video 2"), self.frames_per_video, self.frame_rule),
                                *video1.shape[1:3]) for c in candidates]
        layout = self._pair_layout(concept_words, video1)
        if layout is None:
            return None
        with torch.inference_mode():
            prefix = self._prefix_cache(layout, self._frame_features([video1])[0])
            return self._fitted(lambda batch: self._suffix_answers(layout, prefix, batch), videos2)

    def _pair_layout(self, concept_words: str, video1: np.ndarray) -> PairLayout | None:
        """The token ids of one pair's prompt, made by the processor as the unshared path makes them (the ids do
        not depend on the pixels), and where video 2's lines start; kept per concept words and frame count."""
        layouts = self.__dict__.setdefault("_pair_layouts", OrderedDict())
        key = (str(concept_words), type(concept_words).__name__, self.frames_per_video)
        if key not in layouts:
            layouts[key] = self._split_prompt(concept_words, video1)
            while len(layouts) > self.shared_cache_size:
                layouts.popitem(last=False)
        return layouts[key]

    def _split_prompt(self, concept_words: str, video1: np.ndarray) -> PairLayout | None:
        count = self.frames_per_video
        videos, video_kwargs = self._video_inputs([np.repeat(video1[:1], 2 * count, axis=0)])
        ids = self.processor(text=[self.render_prompt(concept_words)], videos=videos, return_tensors="pt",
                             **video_kwargs)["input_ids"]
        ends = (ids[0] == self.processor.end_image_token_id).nonzero().flatten().tolist()
        if len(ends) != 2 * count:  # the concept words hold a frame's end token: no clean split
            return None
        return PairLayout(ids, ends[count - 1] + 1)

    def _frame_features(self, videos: list[np.ndarray]) -> list[Any]:
        """Each video's projected frame features, (frames x tokens a frame, hidden), in the prompt's order; a video
        seen before (the same array, same frames and size) is not encoded again."""
        kept = self.__dict__.setdefault("_frame_features_kept", OrderedDict())
        detail = (self.frame_spec, str(self.dtype))
        found: dict[int, Any] = {}
        for video in videos:
            entry = kept.get((id(video), detail))
            if entry is not None and entry[0] is video:  # the entry holds its array, so its id is not reused
                kept.move_to_end((id(video), detail))
                found[id(video)] = entry[1]
        new = list({id(v): v for v in videos if id(v) not in found}.values())
        for video, features in zip(new, self._encode(new) if new else [], strict=True):
            found[id(video)] = features
            kept[(id(video), detail)] = (video, features)
        while len(kept) > self.shared_cache_size:
            kept.popitem(last=False)
        return [found[id(v)] for v in videos]

    def _encode(self, videos: list[np.ndarray]) -> list[Any]:
        """One vision-tower pass over the frames of ``videos``, pixels made as the processor makes a pair's."""
        clips, video_kwargs = self._video_inputs(videos)
        pixels = self.processor.video_processor(videos=clips, return_tensors="pt", **video_kwargs)
        pixels = pixels["pixel_values_videos"].flatten(0, 1).to(device=self.device, dtype=self.dtype)
        out = self.model.get_image_features(pixel_values=pixels)
        features = getattr(out, "pooler_output", out)  # (videos x frames, tokens a frame, hidden)
        self.work["vision_calls"] += len(videos)
        return list(features.reshape(len(videos), -1, features.shape[-1]).unbind(0))

    def _prefix_cache(self, layout: PairLayout, features):
        """The key/value cache of the prompt up to the end of video 1's last frame line, at positions 0.."""
        import torch

        ids = layout.ids[:, : layout.split].to(self.device)
        positions = torch.arange(layout.split, device=self.device)[None]
        out = self.model(inputs_embeds=self._embedded(ids, features[None]), position_ids=positions,
                         use_cache=True, logits_to_keep=1)
        self.work["prefix_passes"] += 1
        return _cache_of(out)

    def _suffix_answers(self, layout: PairLayout, prefix, videos2: list[np.ndarray]) -> list[NextToken]:
        """One forward pass over video 2's frame lines, the request and the assistant turn, for each candidate
        after its own copy of the prefix cache. No row is padded: every pair's prompt has the same tokens."""
        import torch

        rows = len(videos2)
        features = torch.stack(self._frame_features(videos2))
        ids = layout.ids[:, layout.split :].to(self.device).expand(rows, -1)
        cache = copy.deepcopy(prefix)  # the suffix pass appends to it; the prefix serves the next batch too
        cache.batch_repeat_interleave(rows)
        out = self.model(inputs_embeds=self._embedded(ids, features),
                         position_ids=self._suffix_positions(layout).expand(rows, -1),
                         use_cache=True, logits_to_keep=1, **{_cache_kwarg(self.model): cache})
        self.work["pair_passes"] += rows
        return self._read_rows(out.logits[:, -1], layout.ids.to(self.device).expand(rows, -1))

    def _suffix_positions(self, layout: PairLayout):
        """Positions of the suffix tokens: the unshared prompt's, continuing after the prefix's."""
        import torch

        return torch.arange(layout.split, layout.ids.shape[1], device=self.device)[None]

    def _embedded(self, ids, features):
        """Token embeddings with each frame's features at its image-context tokens, row by row, as the model's own
        forward places them."""
        embeds = self.model.get_input_embeddings()(ids)
        mask = (ids == self.model.config.image_token_id)[..., None]
        return embeds.masked_scatter(mask, features.to(embeds.device, embeds.dtype))

    def _read_rows(self, logits, ids) -> list[NextToken]:
        """The answer logits and the greedy token of each row, the token chosen after the logits processors the
        one-step generate would apply (none for a plain greedy config) over the whole prompt ``ids``."""
        import torch

        processors = self.model._get_logits_processor(
            generation_config=self._generation_config, input_ids_seq_length=ids.shape[1], encoder_input_ids=ids,
            device=ids.device, model_kwargs={"attention_mask": torch.ones_like(ids)})
        raw = logits.float()
        greedy = processors(ids, raw.clone()).argmax(dim=-1).tolist()
        answer_logits = raw[:, self.answer_ids].cpu().numpy()
        decode = self.processor.tokenizer.decode
        return [self._read(row, decode([token], skip_special_tokens=True))
                for row, token in zip(answer_logits, greedy, strict=True)]


@dataclass(frozen=True)
class PairLayout:
    """One pair's prompt tokens, (1, length): every pair at one frame count has these; ``split`` is where video 2's
    first frame line starts (the newline after video 1's last frame)."""

    ids: Any
    split: int


def _cache_kwarg(model) -> str:
    # transformers 5 renamed ``past_key_values`` to ``cache``
    import inspect

    return "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"


def _cache_of(out):
    cache = getattr(out, "cache", None)
    return cache if cache is not None else out.past_key_values


CHECKPOINTS = [
    Release("internvl", "OpenGVLab/InternVL3-8B-hf", aliases=("internvl3", "internvl3-8b"), claims=("internvl",),
            description="InternVL3 (transformers-native -hf weights), 16 frames a video", params=7.9),
    Release("internvl2.5", "OpenGVLab/InternVL2_5-8B-MPO-hf", aliases=("internvl2.5-8b",),
            description="InternVL2.5-8B-MPO (-hf weights; the paper used the non-MPO remote-code model), "
                        "16 frames a video", params=8.1),
]
register_checkpoints(InternVLReranker, CHECKPOINTS)
