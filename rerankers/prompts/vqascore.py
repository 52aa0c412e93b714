"""VQAScore: how likely a video LMM is to answer "Yes" when asked whether a caption shows in a video.

ConViS-Bench's VQAScore baseline (its ``baselines/compute_similarities.py``, which runs
t2v_metrics' VQAScore with LLaVA-OneVision on 16 frames) scores a pair of videos with captions
(c1, c2) by asking each video about the *other* video's caption:

* video 1 is asked ``Is this figure showing "<c2>"? Please answer yes or no.``
* video 2 is asked ``Is this video showing "<c1>"? Please answer yes or no.``

Each answer scores P("Yes"): the softmax over the whole vocabulary of the logits of the first
answer token, read at the token id of "Yes".  The pair's score is the plain mean of the two, with
no rescaling.  The questions below are the reference's exact text, "figure" in the first and
"video" in the second included.
"""

from __future__ import annotations

# Bump whenever a question, the answer token or a chat layout the questions go in changes: it is part
# of every cached VQAScore's key, so an old score is never read as the new version's.
VQA_PROMPT_VERSION = "vqascore.1"

FIGURE_QUESTION = 'Is this figure showing "{}"? Please answer yes or no.'  # asked about video 1
VIDEO_QUESTION = 'Is this video showing "{}"? Please answer yes or no.'  # asked about video 2
YES = "Yes"  # the answer token whose probability is the score


def pair_questions(caption_1: str, caption_2: str) -> tuple[str, str]:
    """(the question asked about video 1, the one asked about video 2): each names the other's caption.

    Captions are stripped, as the reference strips them; an empty caption is a ValueError.
    """
    first, second = _caption(caption_1, "video 1"), _caption(caption_2, "video 2")
    return FIGURE_QUESTION.format(second), VIDEO_QUESTION.format(first)


def _caption(caption: str, what: str) -> str:
    text = str(caption).strip()
    if not text:
        raise ValueError(f"{what} has no caption to ask about")
    return text


def pair_score(p_video_1: float | None, p_video_2: float | None) -> float | None:
    """The pair's VQAScore: the mean of its two P("Yes").

    None when either half is None (its logits were unreadable): half a pair is not the pair's
    score, and the other half alone would score it against a different question.
    """
    if p_video_1 is None or p_video_2 is None:
        return None
    return (float(p_video_1) + float(p_video_2)) / 2
