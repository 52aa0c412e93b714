"""mPLUG-Owl3 (paper Table 2): registered so that every command knows the name, and refused in one line.

The reference (``encode_concat_video_mPLUG`` + ``models/mplugowl3_model.py`` of benedettaliberatori/convisbench)
loads ``mPLUG/mPLUG-Owl3-7B-240728`` with its own code (``trust_remote_code=True``, bf16, sdpa) and feeds it
8 frames a video picked as Qwen's are (every round(fps)-th frame, then ``int(i*gap + gap/2)``, padded with the
last), handed over at full size: the checkpoint's processor resizes each frame (bicubic) to 384x384, uncut,
normalised with mean and std 0.5.  The 16 frames are one video: ``<|video|>`` becomes one ``<|image|>`` a frame.
The chat is ChatML: system = the concept prompt; user = ``<|video|>``, a newline, "Output a similarity score from
1 to 5."; then the assistant turn.  ``language_model.generate`` decodes one greedy token, parsed as a number.

That code cannot run on the transformers convis is built on (5.x).  Its ``modeling_mplugowl3.py`` imports
``SiglipVisionTransformer`` from ``transformers.models.siglip.modeling_siglip`` and its ``modeling_hyper_qwen2.py``
imports ``transformers.modeling_attn_mask_utils``, both removed in 5.x; past the imports, its decoder calls
``DynamicCache.from_legacy_cache`` and ``get_usable_length``, and it generates through a ``PreTrainedModel``
subclass that stopped inheriting ``generate`` in 4.50.  Its authors pin transformers 4.37.2.  Running it would
mean porting the hyper-attention decoder into convis; until then the family answers with ``refusal`` and the
paper's answers are scored from the released files (``convis bench correlation``).
"""

from __future__ import annotations

from importlib import metadata

from rerankers.base import RERANKERS, RerankerUnavailable
from retrieval.core.sampling import RULE_TEXT

NAME = "mplug-owl3"
CHECKPOINT = "mPLUG/mPLUG-Owl3-7B-240728"
NEEDS = "transformers < 4.50"  # 4.50 took generate() from remote-code models; 5.x took its imports
STATUS = f"unsupported (needs {NEEDS})"  # the weights column of `convis models`: no weights make it run


def refusal(source: str | None = None) -> RerankerUnavailable:
    """The one line every command answers with when asked for mPLUG-Owl3 (``source``: the weights asked for)."""
    return RerankerUnavailable(
        f"{NAME}: the remote code of {source or CHECKPOINT!r} needs {NEEDS}, this is {_installed()} (it imports "
        "SiglipVisionTransformer and transformers.modeling_attn_mask_utils, both removed in 5.x); score the paper's "
        "released mPLUG-Owl3-7B-240728 answers with `convis bench correlation`")


def _installed() -> str:
    try:
        return f"transformers {metadata.version('transformers')}"
    except metadata.PackageNotFoundError:
        return "a machine without transformers"


def _refuse(source: str | None, **_options) -> None:
    raise refusal(source)


CARD = {
    "frames": f"8 a video: {RULE_TEXT['per-second']}; video 1's then video 2's (the reference's; not run here)",
    "size": "full-size frames to the checkpoint's processor: bicubic to 384x384, uncut (the reference's)",
    "pooling": "-",
    "dtype": "bf16 (the reference's)",
}

RERANKERS.register(
    NAME, default_source=CHECKPOINT, aliases=("mplug-owl3-7b",), claims=("mplug-owl3", "mplugowl3"),
    description=f"mPLUG-Owl3-7B (paper Table 2): its remote code needs {NEEDS}, so convis cannot run it; "
                "its released answers are scored by bench correlation",
    card=CARD, weights=lambda source: STATUS,
)(_refuse)
