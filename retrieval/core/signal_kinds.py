"""The pair signals convis computes, by family, with the ConViS-Bench reference's exact definitions (Table 3).

* video-to-video: one indexer's vectors of both clips, ``(cos + 1) / 2`` (DINOv2, CLIP, VideoMAE, InternVideo,
  EfficientNet); the signal is named by its indexer.
* text-to-text: the text indexer (SBERT, all-MiniLM-L6-v2) over both clips' captions (``text``), or over one
  concept's descriptions (``text#location``).
* cross-modal, registered here as members of ``SIGNALS``:

  - ``clipscore[:MODEL]``: the mean of cos(video 1, caption 2) and cos(video 2, caption 1), then ``(s + 1) / 2``,
    from a CLIP-family indexer's video vectors and the same model's text vectors of the captions (computed at
    index time, so a pair costs two dot products). MODEL is the indexer (``clip``, ``internvideo``); default:
    the first the index has.
  - ``vqascore[:MODEL]``: P("Yes") as the first answer token, video 1 asked ``Is this figure showing "<caption
    2>"? Please answer yes or no.`` and video 2 asked ``Is this video showing "<caption 1>"? ...``, the mean of
    the two. MODEL is a video LMM (any reranker spec); default LLaVA-OneVision-7B, the paper's.

Signal ids name what a signal is computed from, so results and JSON can say it: ``clipscore:<indexer model
id>``, ``vqascore:<reranker spec>``, and ``<indexer model id>#caption`` for a CLIP-family model's text vectors
of the captions.
"""

from __future__ import annotations

from dataclasses import dataclass

from retrieval.core.registry import Registry, UnknownModelError

VIDEO_TO_VIDEO = "video-to-video"
TEXT_TO_TEXT = "text-to-text"
CROSS_MODAL = "cross-modal"

CLIPSCORE = "clipscore"
VQASCORE = "vqascore"
CAPTION = "caption"  # the concept key captions are stored under (the whole-clip description)
SEPARATOR = "#"  # between a text model's id and the concept its vectors are of
# CLIP-family indexers in the order Table 3 lists them: ``clipscore`` alone means the first the index has
CLIPSCORE_MODELS = ("clip", "internvideo")
VQASCORE_MODEL = "llava-onevision"  # LLaVA-OneVision-Qwen2-7B, as the reference's VQAScore


@dataclass(frozen=True)
class SignalKind:
    """A registered pair signal: how the reference defines it and what it costs at query time."""

    name: str
    family: str
    model: str | None  # the model asked for (indexer name, or reranker spec); None = the index's default
    definition: str
    cost: str

    @property
    def spec(self) -> str:
        return self.name if self.model is None else f"{self.name}:{self.model}"


SIGNALS: Registry[SignalKind] = Registry("signal")


@SIGNALS.register(CLIPSCORE, description="mean of cos(video 1, caption 2) and cos(video 2, caption 1), (s+1)/2")
def clipscore(model: str | None = None) -> SignalKind:
    return SignalKind(CLIPSCORE, CROSS_MODAL, model,
                      "mean of cos(video 1, caption 2) and cos(video 2, caption 1), then (s + 1) / 2",
                      "two dot products a pair (text vectors computed at index time)")


@SIGNALS.register(VQASCORE, default_source=VQASCORE_MODEL,
                  description='P("Yes") of a video LMM asked whether each video shows the other\'s caption')
def vqascore(model: str | None = None) -> SignalKind:
    return SignalKind(VQASCORE, CROSS_MODAL, model or VQASCORE_MODEL,
                      'mean P("Yes") as the first answer token of the two cross questions (figure 1 / caption 2, '
                      "video 2 / caption 1)", "two LMM forward passes a pair (cached)")


def parse_signal(spec: str) -> SignalKind | None:
    """The registered signal a ``--signal`` value names (``clipscore``, ``vqascore:qwen2-vl``); None when it names
    an indexer or a description signal instead."""
    name, _, model = spec.strip().partition(":")
    if name not in SIGNALS.names():
        return None
    try:
        return SIGNALS.create(spec.strip()) if model else SIGNALS.entry(name).build(None)
    except UnknownModelError:
        return None


def caption_signal(model_id: str) -> str:
    """The id of ``model_id``'s text vectors of the captions (a CLIP-family indexer's text tower)."""
    return f"{model_id}{SEPARATOR}{CAPTION}"


def clipscore_id(video_model_id: str) -> str:
    return f"{CLIPSCORE}:{video_model_id}"


def clipscore_parts(signal: str) -> tuple[str, str] | None:
    """(video vectors' id, caption text vectors' id) of a CLIPScore signal; None for any other signal."""
    name, sep, video = signal.partition(":")
    return (video, caption_signal(video)) if name == CLIPSCORE and sep and video else None


def vqascore_id(reranker_spec: str) -> str:
    return f"{VQASCORE}:{reranker_spec}"


def is_vqascore(signal: str) -> bool:
    return signal.split(":")[0] == VQASCORE
