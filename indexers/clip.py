"""CLIP image tower: open_clip tags (``ViT-L-14/openai``) or transformers CLIP checkpoints.

Both also embed text with their text tower (``embed_texts``), into the space their image vectors live in:
that is what lets a sentence search an index of CLIP vectors.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np
import torch

from indexers.base import l2_normalise
from indexers.errors import ModelUnavailableError, unavailable
from indexers.hf import image_transform, is_local, load_model
from indexers.vision import ImageIndexer, ImageTransform, paper_frames

CLIP_MEAN = (0.48145466, 0.4578275, 0.40821073)
CLIP_STD = (0.26862954, 0.26130258, 0.27577711)


CLIP_CONTEXT = 77  # tokens CLIP's text tower was trained on; longer text is truncated, as the reference does


def _check_vocabulary(source: str, ids: torch.Tensor, vocab: int | None) -> None:
    """A text tower too small for its tokenizer would fail deep in torch: say so in one line instead."""
    if vocab is not None and int(ids.max()) >= vocab:
        raise ModelUnavailableError(f"clip {source}: its tokenizer's ids reach {int(ids.max())} but its text tower "
                                    f"knows {vocab} tokens; these weights cannot embed text")


class OpenClipIndexer(ImageIndexer):
    pooling = "image embedding per frame (encode_image), mean over frames"
    tokenizer = None  # set by the builder: open_clip's own for the model (its context length travels with it)

    def _features(self, pixels: torch.Tensor) -> torch.Tensor:
        return self.model.encode_image(pixels)

    @torch.inference_mode()
    def embed_texts(self, texts: Sequence[str]) -> np.ndarray:
        """encode_text of open_clip's tokens (truncated to the model's context), L2-normalised."""
        if len(texts) == 0:
            return np.zeros((0, self.dim), np.float32)
        tokens = self.tokenizer(list(texts))
        _check_vocabulary(self.source, tokens, getattr(self.model, "vocab_size", None))
        tokens = tokens.to(self.device)
        return l2_normalise(self.model.encode_text(tokens).float().cpu().numpy())

    def text_graph(self):
        """encode_text of token ids, with open_clip's tokenizer as a ``tokenizers`` one: padded with zeros to
        the model's context and truncated to it, its end token kept last, as open_clip's call does."""
        from indexers.text_export import Features, TextGraph

        tokenizer = open_clip_tokenizer(self.tokenizer)
        if tokenizer is None:
            return None
        return TextGraph(Features(self.model, _encode_text), tokenizer, ("input_ids",))


class HFClipIndexer(ImageIndexer):
    pooling = "get_image_features per frame, mean over frames"

    def _features(self, pixels: torch.Tensor) -> torch.Tensor:
        out = self.model.get_image_features(pixel_values=pixels)
        return out if isinstance(out, torch.Tensor) else out.pooler_output

    @property
    def text_context(self) -> int:
        """At most 77 tokens, fewer when the checkpoint's text tower has fewer positions."""
        return min(CLIP_CONTEXT, self.model.config.text_config.max_position_embeddings)

    @torch.inference_mode()
    def embed_texts(self, texts: Sequence[str]) -> np.ndarray:
        """get_text_features of the checkpoint's tokens (truncated to ``text_context``), L2-normalised."""
        if len(texts) == 0:
            return np.zeros((0, self.dim), np.float32)
        tokens = self._tokenizer()(list(texts), padding=True, truncation=True, max_length=self.text_context,
                                   return_tensors="pt").to(self.device)
        _check_vocabulary(self.source, tokens["input_ids"], self.model.config.text_config.vocab_size)
        out = self.model.get_text_features(input_ids=tokens["input_ids"], attention_mask=tokens["attention_mask"])
        out = out if isinstance(out, torch.Tensor) else out.pooler_output
        return l2_normalise(out.float().cpu().numpy())

    def text_graph(self):
        """get_text_features of token ids, with the checkpoint's tokenizer truncating at ``text_context`` and
        padding to the longest sentence, as ``embed_texts`` calls it."""
        from indexers.text_export import Features, TextGraph, tokenizer_of

        tokenizer = tokenizer_of(self._tokenizer(), self.text_context)
        return None if tokenizer is None else TextGraph(Features(self.model, _text_features), tokenizer)

    def _tokenizer(self):
        # loaded on the first text only: indexing frames never needs it
        if getattr(self, "_tokens", None) is None:
            from transformers import AutoTokenizer

            try:
                tokens = AutoTokenizer.from_pretrained(self.source)
            except (OSError, ValueError) as exc:  # none reachable
                raise unavailable("clip", self.source, exc) from None
            # a checkpoint saved without its tokenizer files loads an empty one that reads every word as unknown
            if len(tokens) <= len(tokens.all_special_tokens):
                raise unavailable("clip", self.source, FileNotFoundError("no tokenizer files beside the weights"))
            self._tokens = tokens
        return self._tokens


def open_clip_tokenizer(tokenizer):
    """open_clip's tokenizer as a ``tokenizers.Tokenizer`` set as its call is (pad with 0 to its context length,
    truncate keeping the end token), or None for a kind it does not map to one.  Its CLIP BPE (vocabulary and
    merges) goes through transformers' CLIP tokenizer, which builds the ``tokenizers`` pipeline for it."""
    import json
    import tempfile

    from open_clip.tokenizer import HFTokenizer, SimpleTokenizer

    from indexers.text_export import tokenizer_of

    context = int(tokenizer.context_length)
    if isinstance(tokenizer, HFTokenizer):  # cleaned as its call cleans, padded to the context as it pads
        clean = _clean_normalizer(tokenizer)
        if clean is None or tokenizer.tokenizer_mode or tokenizer.strip_sep_token:
            return None
        backend = tokenizer_of(tokenizer.tokenizer, context, pad_length=context)
        if backend is not None:
            backend.normalizer = clean if backend.normalizer is None else _sequence(clean, backend.normalizer)
        return backend
    if isinstance(tokenizer, SimpleTokenizer):
        from transformers import CLIPTokenizerFast

        with tempfile.TemporaryDirectory() as folder:
            (Path(folder) / "vocab.json").write_text(json.dumps(tokenizer.encoder))
            merges = sorted(tokenizer.bpe_ranks, key=tokenizer.bpe_ranks.get)
            (Path(folder) / "merges.txt").write_text("#version: 0.2\n" + "\n".join(" ".join(m) for m in merges))
            end = tokenizer.decoder[tokenizer.eot_token_id]
            built = CLIPTokenizerFast.from_pretrained(folder, bos_token=tokenizer.decoder[tokenizer.sot_token_id],
                                                      eos_token=end, unk_token=end, pad_token=end)
        backend = built.backend_tokenizer
        # open_clip pads with id 0 (a vocabulary entry, not a special token: naming it would split text on it)
        backend.enable_padding(length=context, pad_id=0, pad_token=tokenizer.decoder[0])
        backend.enable_truncation(context)
        return backend
    return None


def _encode_text(model, ids):
    """encode_text as ONNX can record it: an unmasked text tower (SigLIP's) would otherwise take torch's fused
    attention kernel in inference, which has no ONNX operator; the plain path computes the same."""
    enabled = torch.backends.mha.get_fastpath_enabled()
    torch.backends.mha.set_fastpath_enabled(False)
    try:
        return model.encode_text(ids)
    finally:
        torch.backends.mha.set_fastpath_enabled(enabled)


def _clean_normalizer(tokenizer):
    """open_clip's text cleaning before an HF tokenizer (``whitespace``, or SigLIP's ``canonicalize``: no
    punctuation, lower case) as a ``tokenizers`` normalizer; None for another kind.  Its ftfy repair and HTML
    unescaping have no such normalizer: text that needs them (mojibake, ``&amp;``) can tokenize differently in the
    export, which the export's own check on its probe sentences stands guard over."""
    import string

    from open_clip import tokenizer as oc
    from tokenizers import Regex, normalizers

    spaces = [normalizers.Replace(Regex(r"\s+"), " "), normalizers.Strip()]
    if tokenizer.clean_fn is oc._clean_whitespace:
        return normalizers.Sequence(spaces)
    if tokenizer.clean_fn is oc._clean_canonicalize:
        punctuation = "[" + "".join("\\" + c for c in string.punctuation) + "]"
        return normalizers.Sequence([normalizers.Replace("_", " "), normalizers.Replace(Regex(punctuation), ""),
                                     normalizers.Lowercase(), *spaces])
    return None


def _sequence(first, then):
    from tokenizers import normalizers

    return normalizers.Sequence([first, then])


def _text_features(model, input_ids, attention_mask):
    out = model.get_text_features(input_ids=input_ids, attention_mask=attention_mask)
    return out if isinstance(out, torch.Tensor) else out.pooler_output


def _open_clip_name(source: str) -> tuple[str, str | None]:
    """``ViT-L-14/openai`` -> (arch, tag); ``hf-hub:org/repo`` as is; a local open_clip folder -> local-dir."""
    if source.startswith(("hf-hub:", "local-dir:")):
        return source, None
    if is_local(source):
        return f"local-dir:{Path(source).expanduser()}", None
    arch, _, tag = source.partition("/")
    return arch, tag or None


def open_clip_build_args(source: str) -> tuple[str, str | None, bool]:
    """``source`` -> (name, tag, force_quick_gelu) for ``open_clip.create_model_and_transforms``.

    open_clip 3.x builds a tag's plain arch (``ViT-L-14``) with nn.GELU even when its weights were
    trained with QuickGELU (``openai``, ``metaclip_*``, ``dfn*``, ...), and only warns: the embeddings
    then silently drift. Its pretrained table marks those tags ``quick_gelu``, so force it for them.
    hf-hub:/local-dir: folders carry their own config, which decides.
    """
    import open_clip

    name, tag = _open_clip_name(source)
    if tag is None:
        return name, None, False
    return name, tag, bool(open_clip.get_pretrained_cfg(name, tag).get("quick_gelu", False))


def _is_transformers_checkpoint(source: str) -> bool:
    if is_local(source):
        return (Path(source).expanduser() / "config.json").is_file()
    # open_clip tags look like "ViT-L-14/openai"; transformers ids like "openai/clip-vit-large-patch14"
    tagged = source.startswith(("hf-hub:", "local-dir:"))
    return "/" in source and not tagged and "clip" in source.split("/")[-1].lower()


def _frames(protocol: str, transform: ImageTransform):
    # the paper embeds every frame, resized as CLIP's processor does (bicubic short side, centre crop)
    return paper_frames("every", 1, transform) if protocol == "paper" else None


def load_open_clip(family: str, source: str):
    """(model, tokenizer) of an open_clip ``source``: a tag, ``hf-hub:``, or a local open_clip folder."""
    import open_clip

    name, tag, quick_gelu = open_clip_build_args(source)
    local = Path(name.removeprefix("local-dir:"))
    if name.startswith("local-dir:") and not any(any(local.glob(p)) for p in ("*.safetensors", "*.bin", "*.pth")):
        # open_clip would only warn and hand back random weights
        raise unavailable(family, source, FileNotFoundError("no weights file in the folder"))
    try:
        model = open_clip.create_model(name, pretrained=tag, force_quick_gelu=quick_gelu)
        tokenizer = open_clip.get_tokenizer(name)
    except (RuntimeError, OSError, ValueError) as exc:
        raise unavailable(family, source, exc) from None
    return model, tokenizer


def open_clip_transform(model) -> ImageTransform:
    """The model's own ``preprocess_cfg`` (what ``create_model_and_transforms`` builds its transform from): size,
    mean, std, filter and resize mode."""
    size = model.visual.image_size
    crop = size[0] if isinstance(size, (tuple, list)) else size
    cfg = getattr(model.visual, "preprocess_cfg", {}) or {}
    return ImageTransform(resize=crop, crop=crop, mean=tuple(cfg.get("mean", CLIP_MEAN)),
                          std=tuple(cfg.get("std", CLIP_STD)), resample=cfg.get("interpolation", "bicubic"),
                          resize_mode=cfg.get("resize_mode", "shortest"))


def build_open_clip(family: str, source: str, device: str | None, protocol: str,
                    frames=None) -> OpenClipIndexer:
    """An open_clip image-text indexer of ``family``; ``frames(transform)`` its FrameSpec (None: the default)."""
    model, tokenizer = load_open_clip(family, source)
    transform = open_clip_transform(model)
    spec = frames(transform) if frames else None
    indexer = OpenClipIndexer(family, source, model, transform, _image_dim(model, transform), device, spec, protocol)
    indexer.tokenizer = tokenizer
    return indexer


def _image_dim(model, transform: ImageTransform) -> int:
    dim = getattr(model.visual, "output_dim", None)
    if dim is None:  # a timm trunk (PE, SigLIP) does not say: one blank image does
        with torch.inference_mode():
            dim = model.encode_image(torch.zeros(1, 3, transform.crop, transform.crop)).shape[-1]
    return int(dim)


def _build_open_clip(source: str, device: str | None, protocol: str) -> OpenClipIndexer:
    return build_open_clip("clip", source, device, protocol, lambda transform: _frames(protocol, transform))


def _build_hf_clip(source: str, device: str | None, protocol: str) -> HFClipIndexer:
    from transformers import CLIPModel

    model = load_model(CLIPModel, "clip", source)
    size = model.config.vision_config.image_size
    transform = image_transform(source, ImageTransform(resize=size, crop=size, mean=CLIP_MEAN, std=CLIP_STD))
    return HFClipIndexer("clip", source, model, transform, model.config.projection_dim, device,
                         _frames(protocol, transform), protocol)


def build_clip(source: str, device: str | None = None, protocol: str = "fast", **_):
    if _is_transformers_checkpoint(source):
        return _build_hf_clip(source, device, protocol)
    return _build_open_clip(source, device, protocol)
