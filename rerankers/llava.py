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
checkpoint gives a clear "cannot load" error.
"""

from __future__ import annotations

from typing import ClassVar

from rerankers.hf import HFVideoReranker, Release, register_checkpoints


class LlavaReranker(HFVideoReranker):
    """LLaVA-OneVision and LLaVA-Video (llava_onevision weights), fed as the reference's load_video feeds them."""

    layout = "llava"
    model_classes = {"llava_onevision": "LlavaOnevisionForConditionalGeneration"}
    size_text = f"{HFVideoReranker.size_text} (384x384 SigLIP square for the default weights)"
    frame_rule = "linspace"
    caption_text: ClassVar[str] = (
        "fast: its 16 reranking frames, greedy, 256 new tokens, batched; paper: the same frames, greedy, 256 new "
        "tokens (the reference's generate(); it released no LLaVA captions), one video at a time")


# llava-video comes first: its claim must be tried before the broader llava_onevision one
CHECKPOINTS = [
    Release("llava-video", "llava-hf/LLaVA-Video-7B-Qwen2-hf", aliases=("llava-video-7b",), claims=("llava-video",),
            description="LLaVA-Video-7B-Qwen2 (converted to transformers' llava_onevision), 16 frames a video",
            params=8.0),
    Release("llava-onevision", "llava-hf/llava-onevision-qwen2-7b-ov-hf",
            aliases=("llava-ov", "llava-ov-7b", "llava-onevision-7b"), claims=("llava-onevision", "llava_onevision"),
            description="LLaVA-OneVision, 16 frames a video", params=8.0),
    Release("llava-onevision-0.5b", "llava-hf/llava-onevision-qwen2-0.5b-ov-hf", aliases=("llava-ov-0.5b",),
            description="LLaVA-OneVision 0.5B, 16 frames a video", params=0.9),
]
register_checkpoints(LlavaReranker, CHECKPOINTS)
