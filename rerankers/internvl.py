"""InternVL2.5 / InternVL3 as ConViS rerankers (transformers-native ``internvl`` checkpoints, "-hf").

As the reference (``encode_concat_video_InternVL`` + ``models/internvl2_5_model.py``): 16 frames
a video at the midpoints of 16 equal segments (``get_video_index``), each decoded at full size and
resized (bicubic) to one 448x448 tile (no thumbnail), the 32 frames introduced one per line as ``FrameN: <image>``
between the concept prompt and "Output a similarity score from 1 to 5.", under InternVL's own
system message.  The processor's video expansion writes exactly those ``FrameN:`` lines.

The paper ran the remote-code checkpoints (``OpenGVLab/InternVL2_5-8B``, ``model_type``
"internvl_chat"); transformers loads only the converted "-hf" repositories, so those are the
defaults, and a remote-code checkpoint gives a clear "cannot load" error.  The reference's
InternVL generation sampled (``do_sample=True``); greedy mode here decodes greedily.
"""

from __future__ import annotations

from rerankers.base import RERANKERS
from rerankers.frames import processor_frame_size
from rerankers.hf import HFVideoReranker
from retrieval.core.pixels import FixedResize


class InternVLReranker(HFVideoReranker):
    layout = "internvl"
    model_classes = {"internvl": "InternVLForConditionalGeneration"}
    frames_per_video = 16
    size_text = ("full-size decode, bicubic straight to the video processor's square "
                 "(448x448 for the default weights; one tile a frame, no thumbnail)")
    frame_rule = "midpoints"

    def frame_resize(self) -> FixedResize:
        return FixedResize(*processor_frame_size(self.processor))


_FAMILY = [
    # name, default weights, aliases, claims, description
    (
        "internvl",
        "OpenGVLab/InternVL3-8B-hf",
        ("internvl3", "internvl3-8b"),
        ("internvl",),
        "InternVL3 (transformers-native -hf weights), 16 frames a video",
    ),
    (
        "internvl2.5",
        "OpenGVLab/InternVL2_5-8B-MPO-hf",
        ("internvl2.5-8b",),
        (),
        "InternVL2.5-8B-MPO (-hf weights; the paper used the non-MPO remote-code model), 16 frames a video",
    ),
]


def _register(name: str, default: str, aliases: tuple[str, ...], claims: tuple[str, ...], description: str):
    @RERANKERS.register(name, default_source=default, aliases=aliases, claims=claims, description=description,
                        card=InternVLReranker.card())
    def build(source: str, device=None, dtype=None, **kwargs) -> InternVLReranker:
        return InternVLReranker(source, name=name, device=device, dtype=dtype, **kwargs)


for _row in _FAMILY:
    _register(*_row)
