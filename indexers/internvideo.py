"""InternVideo-family video encoders: a unit's frames are embedded together as one clip, and a caption
through the same checkpoint's text tower (the cross-modal CLIPScore compares the two).

Two kinds of source:

* A transformers checkpoint that ships its own modelling code (hub id or local folder). The default,
  ``OpenGVLab/ViCLIP-L-14-hf``, is ViCLIP ViT-L/14, the video CLIP trained on InternVid for the
  InternVideo family: its config.json maps AutoModel to the bundled ``viclip.ViCLIP``, which embeds
  (B, T, 3, H, W) clips of 8 frames at 224 px with ImageNet mean/std through ``get_vid_features``
  (768-d); captions go one at a time through ``get_text_features(text, model.tokenizer)``, which
  tokenises with its CLIP BPE (truncated to its text context) and encodes with its text tower. Its code
  imports einops, timm, ftfy, regex and pkg_resources (``pip install einops timm ftfy regex
  "setuptools<81"``); it was written for transformers 4, so the loader below bridges what it assumes.
  The InternVideo2 hub repos (``InternVideo2-Stage2_1B-224p-f4``, ``InternVideo2-CLIP-1B-224p-f8``,
  ``InternVideo2_distillation_models``) hold bare ``.pt``/``.pth`` files without a config or code that
  transformers could load.
* The paper's checkpoint, InternVideo v1 ``InternVideo-MM-L-14.ckpt`` (ConViS-Bench's InternVideo
  baseline), given as a file path. The ``InternVideo`` package from the InternVideo repository loads it
  (``InternVideo.load_model(path)``) and embeds with ``model.encode_video`` on (B, 3, T, H, W) clips:
  8 frames, short side 256, centre crop 224, CLIP mean/std, fp32 -- the benchmark's own recipe (under
  the paper protocol also its pixels: PIL bilinear resize, crop offset ``round((side - 224) / 2)``). Captions
  go through ``InternVideo.tokenize(texts, truncate=True)`` (CLIP BPE, 77 tokens) and ``model.encode_text``,
  as the benchmark's CLIPScore does.

Using the paper's checkpoint::

    # InternVideo-MM-L-14.ckpt: InternVideo1 model zoo, https://huggingface.co/OpenGVLab/InternVideo1.0
    git clone https://github.com/OpenGVLab/InternVideo
    # that folder has no setup script, so it goes on the import path rather than through pip
    export PYTHONPATH=$PWD/InternVideo/InternVideo1/Pretrain/Multi-Modalities-Pretraining
    pip install decord ftfy regex timm opencv-python scikit-image "setuptools<81"
    convis index VIDEOS/ -i internvideo:/models/InternVideo-MM-L-14.ckpt --trust-remote-code

Either way code that does not come with convis runs (the checkpoint's files, or the package), so both
load only when the user opts in with ``trust_remote_code`` (CLI: ``--trust-remote-code``). Every failure
is one ModelUnavailableError line: no opt-in, gated repo, missing or uncached file, missing package,
flash-attn.
"""

from __future__ import annotations

import inspect
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np
import torch

from indexers.base import l2_normalise
from indexers.clip import CLIP_MEAN, CLIP_STD
from indexers.errors import ModelUnavailableError, unavailable
from indexers.hf import image_transform
from indexers.vision import ImageTransform, VideoIndexer
from retrieval.core.errors import one_line
from retrieval.core.pixels import ShortSideResize
from retrieval.core.sampling import FrameSpec

DEFAULT_SOURCE = "OpenGVLab/ViCLIP-L-14-hf"
# get_vid_features first: ViCLIP's encode_vision masks 90% of the patches unless told it is testing
FEATURE_METHODS = ("get_vid_features", "get_vid_feat", "encode_vision", "get_video_features")
DEFAULT_FRAMES = 8
V1_FRAMES, V1_RESIZE, V1_CROP = 8, 256, 224  # InternVideo.load_video: 8 frames, Resize(256), CenterCrop(224)
V1_PACKAGE_DIR = "InternVideo1/Pretrain/Multi-Modalities-Pretraining"
# what the package imports; pkg_resources (its `from pkg_resources import packaging`) left setuptools in 81
V1_REQUIREMENTS = "decord ftfy regex timm opencv-python scikit-image 'setuptools<81'"
PIP_NAMES = {"pkg_resources": "'setuptools<81'", "cv2": "opencv-python", "skimage": "scikit-image"}


def video_features(model, pixels: torch.Tensor) -> torch.Tensor:
    """(B, T, 3, H, W) -> (B, D) through the checkpoint's own embedding method."""
    for method in FEATURE_METHODS:
        fn = getattr(model, method, None)
        if fn is not None:
            out = fn(pixels)
            out = out[0] if isinstance(out, (tuple, list)) else out
            return out if out.dim() == 2 else out.mean(dim=1)
    return model(pixels).last_hidden_state.mean(dim=1)


class InternVideoIndexer(VideoIndexer):
    def _features(self, pixels: torch.Tensor) -> torch.Tensor:
        return video_features(self.model, pixels)

    @torch.inference_mode()
    def embed_texts(self, texts: Sequence[str]) -> np.ndarray:
        """The checkpoint's ``get_text_features`` of each caption (its own tokeniser), L2-normalised."""
        if len(texts) == 0:
            return np.zeros((0, self.dim), np.float32)
        encode = getattr(self.model, "get_text_features", None)
        if encode is None:
            raise ModelUnavailableError(f"internvideo checkpoint {self.source!r} has no text tower "
                                        "(its model class defines no get_text_features)")
        tokenizer = getattr(self.model, "tokenizer", None)
        # one caption a call: ViCLIP formats its input as one string. Its cache argument defaults to a dict
        # shared by every call in the process; a fresh one keeps each caption's features from piling up there
        rows = [encode(text, tokenizer, {}).reshape(1, -1) for text in texts]
        return l2_normalise(torch.cat(rows).float().cpu().numpy())


class InternVideoV1Indexer(VideoIndexer):
    """The InternVideo package's VideoIntern model, run in fp32 as the benchmark ran it."""

    def __init__(self, name: str, source: str, model: torch.nn.Module, transform: ImageTransform, dim: int,
                 device: str | None = None, frame_spec: FrameSpec | None = None, protocol: str = "fast"):
        # the base class would cast to half on CUDA, and casting back cannot restore the fp32 weights
        super().__init__(name, source, torch.nn.Module(), transform, dim, device, frame_spec, protocol)
        self.dtype = torch.float32
        self.model = model.to(self.device, self.dtype).eval()

    def _features(self, pixels: torch.Tensor) -> torch.Tensor:
        return self.model.encode_video(pixels.permute(0, 2, 1, 3, 4))  # encode_video takes (B, 3, T, H, W)

    @torch.inference_mode()
    def embed_texts(self, texts: Sequence[str]) -> np.ndarray:
        """``encode_text`` of the package's tokens (77, long captions truncated), L2-normalised."""
        if len(texts) == 0:
            return np.zeros((0, self.dim), np.float32)
        # truncate=True as the benchmark's CLIPScore: without it the package refuses captions over 77 tokens.
        # One batch equals one caption a call there: every row is padded to 77 and the text tower is causal
        tokens = _import_v1().tokenize(list(texts), truncate=True).to(self.device)
        return l2_normalise(self.model.encode_text(tokens).float().cpu().numpy())


# -- failures as one line ---------------------------------------------------------------------------
def _chain(exc: BaseException):
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        yield exc
        exc = exc.__cause__ or exc.__context__


def _is_gated(exc: BaseException) -> bool:
    from huggingface_hub.errors import GatedRepoError

    for e in _chain(exc):
        text = str(e).lower()
        if isinstance(e, GatedRepoError) or "gated repo" in text:
            return True
        if re.search(r"\b(401|403)\b", text) and re.search(r"unauthori[sz]ed|forbidden|client error", text):
            return True
    return False


def _needs_flash_attn(exc: BaseException) -> bool:
    return any(isinstance(e, ImportError) and re.search(r"flash[_-]?attn|flashattention", f"{e} {e.name}", re.I)
               for e in _chain(exc))


def _missing_modules(exc: BaseException) -> str | None:
    """What a checkpoint's code could not import: transformers lists the modules, Python names one."""
    for e in _chain(exc):
        found = re.search(r"not found in your environment: (.+?)\. Run", str(e))
        if found:
            return found.group(1)
        if isinstance(e, ModuleNotFoundError) and e.name:
            return e.name.split(".")[0]
    return None


def _reason(family: str, source: str, exc: BaseException) -> ModelUnavailableError:
    if _needs_flash_attn(exc):
        return ModelUnavailableError(f"{family} checkpoint {source!r} needs flash-attn (pip install flash-attn) "
                                     "and a CUDA GPU")
    missing = _missing_modules(exc)
    if missing:
        names = " ".join(PIP_NAMES.get(name, name) for name in re.split(r"[,\s]+", missing.strip()))
        return ModelUnavailableError(f"{family} checkpoint {source!r} needs modules that are not installed: "
                                     f"{missing} (pip install {names})")
    if _is_gated(exc):
        return ModelUnavailableError(
            f"{family} checkpoint {source!r} is a gated or private repo: accept its terms at "
            f"https://huggingface.co/{source} and log in (hf auth login), or pass a local copy of its folder")
    if isinstance(exc, (OSError, ValueError)):
        return unavailable(family, source, exc)  # missing file, not cached while offline, no such repo
    return ModelUnavailableError(f"cannot load {family} checkpoint {source!r} ({type(exc).__name__}: "
                                 f"{one_line(exc)})")


# -- transformers checkpoints -----------------------------------------------------------------------
def _local_tokenizer(config, source: str) -> None:
    # ViCLIP's config names its BPE vocabulary relative to the working directory; use the copy beside config.json
    path = getattr(config, "tokenizer_path", None)
    if isinstance(path, str) and not Path(path).is_absolute():
        from transformers.utils import cached_file

        config.tokenizer_path = cached_file(source, Path(path).name)


def _prepare_remote_code(config, source: str) -> None:
    """Work around two assumptions of code written for transformers 4 (ViCLIP's) before AutoModel runs it."""
    ref = (getattr(config, "auto_map", None) or {}).get("AutoModel")
    if not ref:
        return
    from transformers.dynamic_module_utils import get_class_from_dynamic_module

    cls = get_class_from_dynamic_module(ref, source)
    # transformers 5 sets all_tied_weights_keys in post_init(), which that code never calls: nothing is tied
    if not hasattr(cls, "all_tied_weights_keys"):
        cls.all_tied_weights_keys = {}
    # its text tower opens the BPE vocabulary beside its own module file, where transformers copies only .py files
    vocab = getattr(config, "tokenizer_path", None)
    beside = Path(inspect.getfile(cls)).parent / Path(vocab or "").name
    if vocab and Path(vocab).is_file() and not beside.is_file():
        shutil.copyfile(vocab, beside)


def load_checkpoint(source: str) -> torch.nn.Module:
    """AutoModel with the checkpoint's own code; every failure becomes one ModelUnavailableError line."""
    from transformers import AutoConfig, AutoModel

    try:
        config = AutoConfig.from_pretrained(source, trust_remote_code=True)
        _local_tokenizer(config, source)
        _prepare_remote_code(config, source)
        model = AutoModel.from_pretrained(source, config=config, trust_remote_code=True)
    except Exception as exc:  # the checkpoint's code may raise anything; the user gets one line, not its traceback
        raise _reason("internvideo", source, exc) from None
    return model.eval()


def _model_int(model, keys: tuple[str, ...], default: int) -> int:
    for owner in (model.config, model):
        for key in keys:
            value = getattr(owner, key, None)
            if isinstance(value, int) and value > 0:
                return value
    return default


def _build_checkpoint(source: str, device: str | None) -> InternVideoIndexer:
    model = load_checkpoint(source)
    size = _model_int(model, ("image_size", "img_size", "inputs_image_res"), 224)
    # ViCLIP was trained on whole frames resized to 224: keep the full short side, crop only the long one
    transform = image_transform(source, ImageTransform(resize=size, crop=size))
    indexer = InternVideoIndexer("internvideo", source, model, transform, 0, device)
    # a video model sees its clip spread over the unit, as the reference's video loaders do
    indexer.frame_spec = FrameSpec("linspace", _model_int(model, ("num_frames", "frames", "video_num_frames",
                                                                  "video_input_num_frames"), DEFAULT_FRAMES))
    return _probe_dim(indexer)


# -- the paper's InternVideo v1 .ckpt ---------------------------------------------------------------
def _import_v1():
    try:
        import InternVideo
    except ImportError as exc:
        if exc.name == "InternVideo":
            raise ModelUnavailableError(
                "the InternVideo package (needed for .ckpt checkpoints) is not importable: git clone "
                f"https://github.com/OpenGVLab/InternVideo, add its {V1_PACKAGE_DIR} folder to PYTHONPATH "
                f"(it has no setup script) and pip install {V1_REQUIREMENTS}") from None
        raise ModelUnavailableError(f"the InternVideo package is on the path but its import fails "
                                    f"({one_line(exc)}); pip install {V1_REQUIREMENTS}") from None
    return InternVideo


def load_v1(path: Path) -> torch.nn.Module:
    package = _import_v1()
    try:
        return package.load_model(str(path)).eval()
    except Exception as exc:  # torch.load / the package's builder: a corrupt or foreign file, a missing key
        raise ModelUnavailableError(f"the InternVideo package cannot load {str(path)!r} "
                                    f"({type(exc).__name__}: {one_line(exc)})") from None


@dataclass(frozen=True)
class LoadVideoResize(ShortSideResize):
    """``InternVideo.load_video``'s resize and crop of one full-size frame. Its video_transform works on PIL
    frames (TensorToNumpy makes them): ``Resize(256)`` keeps its default interpolation 'nearest', which
    ``resize_clip``'s PIL branch maps to PIL's BILINEAR (only 'bilinear' gives NEAREST there), short side 256
    and long side ``int(256 * long / short)``; ``CenterCrop(224)`` starts at ``int(round((side - 224) / 2.))``,
    Python's half-to-even round: a 455-px side is cropped from 116, where transformers' ``// 2`` gives 115."""

    short_side: int = V1_RESIZE
    crop: int | None = V1_CROP
    resample: str = "bilinear"

    def apply(self, frame: np.ndarray) -> np.ndarray:
        resized = ShortSideResize(self.short_side, None, self.resample).apply(frame)
        height, width = resized.shape[:2]
        top, left = round((height - self.crop) / 2), round((width - self.crop) / 2)
        return resized[top : top + self.crop, left : left + self.crop]

    def describe(self) -> str:
        return (f"full-size decode, PIL {self.resample} short side {self.short_side} px, centre crop "
                f"{self.crop}x{self.crop} at round((side - {self.crop}) / 2) (InternVideo.load_video)")


def _build_v1(path: Path, device: str | None, protocol: str) -> InternVideoV1Indexer:
    transform = ImageTransform(resize=V1_RESIZE, crop=V1_CROP, mean=CLIP_MEAN, std=CLIP_STD)
    # np.linspace(0, n-1, 8) as the package's load_video; its temporal position table has 8 slots
    resize = LoadVideoResize() if protocol == "paper" else None
    spec = FrameSpec("linspace", V1_FRAMES, resize)
    indexer = InternVideoV1Indexer("internvideo", str(path), load_v1(path), transform, 0, device, spec, protocol)
    return _probe_dim(indexer)


# -- the family -------------------------------------------------------------------------------------
def _probe_dim(indexer: VideoIndexer) -> VideoIndexer:
    # checkpoints disagree on where they store the width; one dummy clip through the real path is the answer
    crop = indexer.transform.crop
    indexer.dim = int(indexer._run(torch.zeros(1, indexer.frames_per_unit, 3, crop, crop)).shape[-1])
    return indexer


def _check_local(source: str) -> Path | None:
    """The .ckpt file a source names, else None (a hub id or checkpoint folder); bad local paths fail here."""
    path = Path(source).expanduser()
    if path.suffix == ".ckpt":
        if not path.is_file():
            raise ModelUnavailableError(f"internvideo checkpoint file {source!r} does not exist")
        return path
    if path.is_file():
        raise ModelUnavailableError(f"internvideo weights {source!r}: expected the InternVideo v1 .ckpt file, "
                                    "or a transformers checkpoint (hub id or folder with config.json)")
    if path.is_dir() and not (path / "config.json").is_file():
        raise ModelUnavailableError(
            f"internvideo folder {source!r} has no config.json, so it is not a transformers checkpoint; "
            "for the paper's InternVideo v1 weights pass the .ckpt file itself")
    if not path.exists() and source.startswith(("/", ".", "~")):
        raise ModelUnavailableError(f"internvideo weights {source!r}: no such file or folder")
    return None


def build_internvideo(source: str, device: str | None = None, trust_remote_code: bool = False,
                      protocol: str = "fast", **_):
    ckpt = _check_local(source)
    if not trust_remote_code:
        runs = "the InternVideo package" if ckpt else "code shipped with the weights"
        raise ModelUnavailableError(f"internvideo weights {source!r} run {runs}; "
                                    "re-run with --trust-remote-code if you trust that source")
    return _build_v1(ckpt, device, protocol) if ckpt else _build_checkpoint(source, device)
