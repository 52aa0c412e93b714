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

from typing import ClassVar

from rerankers.hf import HFVideoReranker, Release, register_checkpoints

# how transformers' LlavaOnevision turns a video's frames into visual tokens
VIDEO_TOKENS = "each frame's features pooled 2x2 (bilinear), then one newline token after the whole video"


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
