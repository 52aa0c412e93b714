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

from rerankers.hf import HFVideoReranker, Release, register_checkpoints


class InternVLReranker(HFVideoReranker):
    """InternVL3 / InternVL2.5 (transformers-native -hf weights), fed one tile a frame at the frames the
    reference's get_video_index picks (segment midpoints), each frame named in the prompt as the reference does."""

    layout = "internvl"
    model_classes = {"internvl": "InternVLForConditionalGeneration"}
    size_text = f"{HFVideoReranker.size_text} (448x448 for the default weights; one tile a frame, no thumbnail)"
    frame_rule = "midpoints"
    paper_dtype = "bf16"  # the reference's from_pretrained(torch_dtype=torch.bfloat16)
    paper_dtype_source = "as the reference loaded it"


CHECKPOINTS = [
    Release("internvl", "OpenGVLab/InternVL3-8B-hf", aliases=("internvl3", "internvl3-8b"), claims=("internvl",),
            description="InternVL3 (transformers-native -hf weights), 16 frames a video", params=7.9),
    Release("internvl2.5", "OpenGVLab/InternVL2_5-8B-MPO-hf", aliases=("internvl2.5-8b",),
            description="InternVL2.5-8B-MPO (-hf weights; the paper used the non-MPO remote-code model), "
                        "16 frames a video", params=8.1),
]
register_checkpoints(InternVLReranker, CHECKPOINTS)
