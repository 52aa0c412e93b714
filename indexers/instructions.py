"""What each instruction-following embedder is told, as data (``indexers.conditioned.Instructions``).

Qwen3-VL-Embedding reads its instruction as the system message of its chat (QwenLM/Qwen3-VL-Embedding,
``src/models/qwen3_vl_embedding.py``: ``format_model_input``; an instruction without final punctuation gets a
full stop there).  The generic and query wordings are the reference's own: its default instruction, and the
text-to-video instruction of its MSR-VTT evaluation (``src/evaluation/mmeb_v2/data/datasets/msrvtt_dataset.py``,
``TASK_INST_QRY``).  The per-concept wordings are convis's: each names one ConViS concept as the paper defines it
and asks the model to leave the others out.  Changing any wording changes ``Instructions.version`` and so
embeds every unit again.
"""

from __future__ import annotations

from indexers.conditioned import CONCEPT_SLOT, Instructions

QWEN3_VL_EMBEDDING = Instructions(
    generic="Represent the user's input.",
    query="Find a video that contains the following visual content.",
    concepts={
        "location": "Represent the location of this video: the place and setting where it happens, "
                    "regardless of who is there or what they do.",
        "main-action": "Represent the main action performed in this video, regardless of who performs it "
                       "or where.",
        "main-subjects": "Represent the main subjects of this video: the people or animals it is about, "
                         "regardless of what they do or where.",
        "main-objects": "Represent the main objects in this video: the things that are used or shown, "
                        "regardless of who uses them or where.",
        "order-of-actions": "Represent the order of actions in this video: which steps happen, one after "
                            "another, regardless of who performs them or where.",
    },
    template="Represent the " + CONCEPT_SLOT + " of this video, regardless of anything else in it.",
    source="generic and query: the reference's; concepts: convis's own",
)

INSTRUCTIONS = {"qwen3-vl-embedding": QWEN3_VL_EMBEDDING}
