"""InternVL2.5 / InternVL3 as ConViS rerankers (transformers-native ``internvl`` checkpoints, "-hf").

As the reference (``encode_concat_video_InternVL`` + ``models/internvl2_5_model.py``): 16 frames
a video at the midpoints of 16 equal segments (``get_video_index``), each decoded at full size and
resized (bicubic) to one 448x448 tile (no thumbnail), the 32 frames introduced one per line as ``FrameN: <image>``
between the concept prompt and "Output a similarity score from 1 to 5.", under InternVL's own
system message.  The processor's video expansion writes exactly those ``FrameN:`` lines.  Captions under the
paper protocol sample as the reference's ``chat`` did (``paper_caption_rule``).

The paper ran the remote-code checkpoints (``OpenGVLab/InternVL2_5-8B``, ``model_type``
"internvl_chat"); transformers loads only the converted "-hf" repositories, so those are the
defaults, and a remote-code checkpoint gives a clear "cannot load" error.  The reference's
InternVL generation sampled (``do_sample=True``); greedy mode here decodes greedily.
"""

from __future__ import annotations

from typing import ClassVar

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


CHECKPOINTS = [
    Release("internvl", "OpenGVLab/InternVL3-8B-hf", aliases=("internvl3", "internvl3-8b"), claims=("internvl",),
            description="InternVL3 (transformers-native -hf weights), 16 frames a video", params=7.9),
    Release("internvl2.5", "OpenGVLab/InternVL2_5-8B-MPO-hf", aliases=("internvl2.5-8b",),
            description="InternVL2.5-8B-MPO (-hf weights; the paper used the non-MPO remote-code model), "
                        "16 frames a video", params=8.1),
]
register_checkpoints(InternVLReranker, CHECKPOINTS)
