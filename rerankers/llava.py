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

from rerankers.base import RERANKERS
from rerankers.frames import processor_frame_size
from rerankers.hf import HFVideoReranker
from retrieval.core.pixels import FixedResize


class LlavaReranker(HFVideoReranker):
    layout = "llava"
    model_classes = {"llava_onevision": "LlavaOnevisionForConditionalGeneration"}
    frames_per_video = 16
    size_text = ("full-size decode, bicubic straight to the video processor's square "
                 "(384x384 SigLIP square for the default weights)")
    frame_rule = "linspace"

    def frame_resize(self) -> FixedResize:
        return FixedResize(*processor_frame_size(self.processor))


# llava-video comes first: its claim must be tried before the broader llava_onevision one
_FAMILY = [
    # name, default weights, aliases, claims, description
    (
        "llava-video",
        "llava-hf/LLaVA-Video-7B-Qwen2-hf",
        ("llava-video-7b",),
        ("llava-video",),
        "LLaVA-Video-7B-Qwen2 (converted to transformers' llava_onevision), 16 frames a video",
    ),
    (
        "llava-onevision",
        "llava-hf/llava-onevision-qwen2-7b-ov-hf",
        ("llava-ov", "llava-ov-7b", "llava-onevision-7b"),
        ("llava-onevision", "llava_onevision"),
        "LLaVA-OneVision, 16 frames a video",
    ),
    (
        "llava-onevision-0.5b",
        "llava-hf/llava-onevision-qwen2-0.5b-ov-hf",
        ("llava-ov-0.5b",),
        (),
        "LLaVA-OneVision 0.5B, 16 frames a video",
    ),
]


def _register(name: str, default: str, aliases: tuple[str, ...], claims: tuple[str, ...], description: str):
    @RERANKERS.register(name, default_source=default, aliases=aliases, claims=claims, description=description,
                        card=LlavaReranker.card())
    def build(source: str, device=None, dtype=None, **kwargs) -> LlavaReranker:
        return LlavaReranker(source, name=name, device=device, dtype=dtype, **kwargs)


for _row in _FAMILY:
    _register(*_row)
