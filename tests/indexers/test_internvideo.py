"""The internvideo family: ViCLIP-style remote-code checkpoints, the paper's InternVideo v1 .ckpt, and
one-line failures for everything that can stop them loading."""

from __future__ import annotations

import importlib.util
import json
import sys
import textwrap
import types

import numpy as np
import pytest
import torch

import indexers.internvideo as internvideo
from indexers import create_indexer
from indexers.errors import ModelUnavailableError
from retrieval.media.video_decoder import VideoDecoder
from tests import media
from tests.textured import SOURCE_SIZES

CLIP_MEAN = (0.48145466, 0.4578275, 0.40821073)
CLIP_STD = (0.26862954, 0.26130258, 0.27577711)
HUB_ID = "OpenGVLab/ViCLIP-L-14-hf"

# A checkpoint shaped like OpenGVLab/ViCLIP-L-14-hf: an auto_map to its own module, a tokenizer path relative to
# the repo, a text tower that opens its vocabulary beside its module file, and no post_init() call. Its
# get_text_features has ViCLIP's signature (one caption, the model's tokenizer, a cache dict defaulting to one
# shared by every call) and records what it was given and what it returned.
TINY_MODULE = '''
import os

import torch
from torch import nn
from transformers import PretrainedConfig, PreTrainedModel
{extra_import}

class TinyViCLIPConfig(PretrainedConfig):
    pass


class TinyViCLIP(PreTrainedModel):
    config_class = TinyViCLIPConfig

    def __init__(self, config):
        super().__init__(config)
        open(config.tokenizer_path, "rb").close()
        open(os.path.join(os.path.dirname(__file__), "vocab.txt.gz"), "rb").close()
        self.video_input_num_frames = 8
        self.inputs_image_res = 32
        self.proj = nn.Linear(3, 6)
        self.tokenizer = object()
        self.text_calls = []

    def get_text_features(self, input_text, tokenizer, text_feature_dict={{}}):
        codes = torch.tensor([len(input_text), input_text.count(" "), sum(map(ord, input_text)) % 97])
        out = self.proj(codes.to(self.proj.weight))[None]
        self.text_calls.append((input_text, tokenizer, text_feature_dict, out.clone()))
        return out

    def encode_vision(self, frames, test=False):
        raise AssertionError("masks patches unless test=True; get_vid_features must be preferred")

    def get_vid_features(self, frames):
        assert frames.shape[1:] == (8, 3, 32, 32), frames.shape
        return nn.functional.normalize(self.proj(frames.float().mean(dim=(1, 3, 4))), dim=-1)
'''


def one_line(err: pytest.ExceptionInfo) -> str:
    """The message, after checking it is one line with no chained traceback behind it."""
    message, exc = str(err.value), err.value
    assert "\n" not in message and exc.__cause__ is None and (exc.__context__ is None or exc.__suppress_context__)
    return message


@pytest.fixture
def remote_code(monkeypatch, tmp_path):
    """Dynamic modules go to a private folder; the working directory holds none of the checkpoint's files."""
    import transformers.dynamic_module_utils as dynamic

    monkeypatch.setattr(dynamic, "HF_MODULES_CACHE", str(tmp_path / "modules"))
    monkeypatch.setattr(sys, "path", list(sys.path))
    workdir = tmp_path / "elsewhere"
    workdir.mkdir()
    monkeypatch.chdir(workdir)
    yield
    # the modules loaded from this folder go with it: a later test loading the same code must not find them
    # imported already, reading files from a folder deleted once this test passed
    for name in [n for n in sys.modules if n.split(".")[0] == "transformers_modules"]:
        del sys.modules[name]


def tiny_viclip(folder, extra_import="", weights=True):
    from safetensors.torch import save_file

    folder.mkdir()
    (folder / "modeling_tiny_viclip.py").write_text(TINY_MODULE.format(extra_import=extra_import))
    (folder / "vocab.txt.gz").write_bytes(b"vocabulary")
    (folder / "config.json").write_text(json.dumps({
        "architectures": ["TinyViCLIP"],
        "auto_map": {"AutoConfig": "modeling_tiny_viclip.TinyViCLIPConfig",
                     "AutoModel": "modeling_tiny_viclip.TinyViCLIP"},
        "tokenizer_path": "./vocab.txt.gz",
    }))
    if weights:
        torch.manual_seed(0)
        save_file({"proj.weight": torch.randn(6, 3), "proj.bias": torch.randn(6)}, folder / "model.safetensors")
    return folder


# -- transformers checkpoints -----------------------------------------------------------------------------------
def test_viclip_style_checkpoint_loads_through_automodel(remote_code, tmp_path):
    from safetensors.torch import load_file

    folder = tiny_viclip(tmp_path / "tiny-viclip")
    ix = create_indexer(f"internvideo:{folder}", trust_remote_code=True, device="cpu")
    assert (ix.kind, ix.dim, ix.frames_per_unit, ix.transform.crop) == ("video", 6, 8, 32)
    torch.testing.assert_close(ix.model.proj.weight, load_file(folder / "model.safetensors")["proj.weight"])
    out = ix.embed_units([np.random.default_rng(0).integers(0, 255, (8, 48, 64, 3), dtype=np.uint8)])
    assert out.shape == (1, 6)
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, atol=1e-5)


@pytest.mark.parametrize("spec", ["internvideo", f"internvideo:{HUB_ID}", "internvideo:{folder}", "internvideo:{ckpt}"])
def test_remote_code_needs_explicit_trust(tmp_path, spec):
    folder = tiny_viclip(tmp_path / "tiny-viclip")
    ckpt = tmp_path / "InternVideo-MM-L-14.ckpt"
    ckpt.write_bytes(b"weights")
    with pytest.raises(ModelUnavailableError) as err:
        create_indexer(spec.format(folder=folder, ckpt=ckpt))
    assert "--trust-remote-code" in one_line(err)


def gated_repo_error():
    """The exception huggingface_hub raises for a gated repo, made by its own response check."""
    from huggingface_hub.utils import _http, hf_raise_for_status

    http = getattr(_http, "httpx2", None) or _http.httpx
    url = f"https://huggingface.co/{HUB_ID}/resolve/main/config.json"
    response = http.Response(403, headers={"X-Error-Code": "GatedRepo", "X-Error-Message": "Access restricted"},
                             request=http.Request("GET", url))
    try:
        hf_raise_for_status(response)
    except Exception as exc:
        return exc
    raise AssertionError("a 403 GatedRepo response did not raise")


@pytest.fixture
def hub_raises(monkeypatch):
    """The config loads; AutoModel.from_pretrained then raises what the hub or the checkpoint's code raised."""
    import transformers

    def install(exc: BaseException):
        def fail(*args, **kwargs):
            raise exc

        monkeypatch.setattr(transformers.AutoConfig, "from_pretrained",
                            lambda *a, **k: transformers.PretrainedConfig())
        monkeypatch.setattr(transformers.AutoModel, "from_pretrained", fail)

    return install


def test_gated_repo_is_one_line(hub_raises):
    from huggingface_hub.errors import GatedRepoError

    exc = gated_repo_error()
    assert isinstance(exc, GatedRepoError)
    hub_raises(exc)
    with pytest.raises(ModelUnavailableError) as err:
        create_indexer("internvideo", trust_remote_code=True)
    message = one_line(err)
    assert "gated" in message and f"https://huggingface.co/{HUB_ID}" in message and "hf auth login" in message


@pytest.mark.parametrize("text", [
    f"You are trying to access a gated repo.\nMake sure to have access to it at https://huggingface.co/{HUB_ID}.",
    f"401 Client Error: Unauthorized for url: https://huggingface.co/{HUB_ID}/resolve/main/config.json",
    f"403 Client Error: Forbidden for url: https://huggingface.co/{HUB_ID}/resolve/main/config.json",
])
def test_gated_repo_as_transformers_reports_it(hub_raises, text):
    hub_raises(OSError(text))
    with pytest.raises(ModelUnavailableError) as err:
        create_indexer("internvideo", trust_remote_code=True)
    assert "gated or private repo" in one_line(err)


def test_not_cached_offline_says_how_to_provide_weights(remote_code):
    with pytest.raises(ModelUnavailableError) as err:
        create_indexer("internvideo:OpenGVLab/ViCLIP-not-cached-anywhere", trust_remote_code=True)
    message = one_line(err)
    assert "cannot load internvideo weights" in message and "local weights folder" in message


@pytest.mark.parametrize("missing", ["vocab.txt.gz", "model.safetensors"])
def test_checkpoint_missing_a_file(remote_code, tmp_path, missing):
    folder = tiny_viclip(tmp_path / "tiny-viclip")
    (folder / missing).unlink()
    with pytest.raises(ModelUnavailableError) as err:
        create_indexer(f"internvideo:{folder}", trust_remote_code=True)
    assert "cannot load internvideo weights" in one_line(err)


def test_folder_without_config(tmp_path):
    folder = tmp_path / "InternVideo-MM-L-14"
    folder.mkdir()
    for trust in (False, True):
        with pytest.raises(ModelUnavailableError) as err:
            create_indexer(f"internvideo:{folder}", trust_remote_code=trust)
        assert "has no config.json" in one_line(err)


def test_checkpoint_code_importing_flash_attn(remote_code, tmp_path):
    if importlib.util.find_spec("flash_attn") is not None:
        pytest.skip("flash-attn is installed here")
    folder = tiny_viclip(tmp_path / "tiny-flash", extra_import="import flash_attn")
    with pytest.raises(ModelUnavailableError) as err:
        create_indexer(f"internvideo:{folder}", trust_remote_code=True)
    assert "needs flash-attn (pip install flash-attn) and a CUDA GPU" in one_line(err)


@pytest.mark.parametrize("exc", [
    ImportError("This modeling file requires the following packages that were not found in your environment: "
                "flash_attn. Run `pip install flash_attn`"),
    ModuleNotFoundError("No module named 'flash_attn'", name="flash_attn"),
])
def test_flash_attn_import_error_from_automodel(hub_raises, exc):
    hub_raises(exc)
    with pytest.raises(ModelUnavailableError) as err:
        create_indexer("internvideo", trust_remote_code=True)
    assert "needs flash-attn (pip install flash-attn) and a CUDA GPU" in one_line(err)


def test_missing_modules_name_their_pip_packages(hub_raises):
    hub_raises(ImportError("This modeling file requires the following packages that were not found in your "
                           "environment: einops, pkg_resources. Run `pip install einops pkg_resources`"))
    with pytest.raises(ModelUnavailableError) as err:
        create_indexer("internvideo", trust_remote_code=True)
    assert "pip install einops 'setuptools<81'" in one_line(err)


def test_other_failures_of_checkpoint_code_are_one_line(hub_raises):
    hub_raises(AttributeError("'ViCLIP' object has no attribute 'something_new'"))
    with pytest.raises(ModelUnavailableError) as err:
        create_indexer("internvideo", trust_remote_code=True)
    assert "AttributeError" in one_line(err)


# -- the paper's InternVideo v1 .ckpt ------------------------------------------------------------------------------
SOT, EOT = 49406, 49407  # CLIP BPE's <|startoftext|> and <|endoftext|>


class FakeVideoIntern(torch.nn.Module):
    """Stands in for InternVideo's VideoIntern: records what encode_video and encode_text receive and return."""

    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(3, 16)
        self.words = torch.nn.Embedding(EOT + 1, 16)
        self.seen: list[torch.Tensor] = []
        self.videos: list[torch.Tensor] = []
        self.texts: list[tuple[torch.Tensor, torch.Tensor]] = []

    def encode_video(self, video: torch.Tensor) -> torch.Tensor:
        self.seen.append(video.detach().clone())
        out = self.proj(video.mean(dim=(2, 3, 4)))
        self.videos.append(out.detach().clone())
        return out

    def encode_text(self, text: torch.Tensor) -> torch.Tensor:
        out = self.words(text).sum(dim=1)
        self.texts.append((text.detach().clone(), out.detach().clone()))
        return out


def fake_tokenize(texts, context_length=77, truncate=False):
    """InternVideo.tokenize's contract, one token a character: int32 (n, 77), SOT ... EOT, zero padded; a
    caption over the context raises unless truncated, and a truncated one still ends in EOT."""
    texts = [texts] if isinstance(texts, str) else texts
    result = torch.zeros(len(texts), context_length, dtype=torch.int)
    for i, text in enumerate(texts):
        tokens = [SOT, *(ord(c) % SOT for c in text), EOT]
        if len(tokens) > context_length:
            if not truncate:
                raise RuntimeError(f"Input {text} is too long for context length {context_length}")
            tokens = tokens[:context_length]
            tokens[-1] = EOT
        result[i, :len(tokens)] = torch.tensor(tokens)
    return result


@pytest.fixture
def fake_internvideo(monkeypatch):
    package = types.ModuleType("InternVideo")
    package.loaded = []

    def load_model(path):
        package.loaded.append(path)
        package.model = FakeVideoIntern()
        return package.model

    def tokenize(texts, context_length=77, truncate=False):
        package.tokenized.append((texts, context_length, truncate))
        return fake_tokenize(texts, context_length, truncate)

    package.load_model = load_model
    package.tokenize = tokenize
    package.tokenized = []
    monkeypatch.setitem(sys.modules, "InternVideo", package)
    return package


@pytest.fixture
def ckpt(tmp_path):
    path = tmp_path / "InternVideo-MM-L-14.ckpt"
    path.write_bytes(b"not read by the fake package")
    return path


def test_v1_ckpt_gets_8_clip_normalised_frames_at_224(fake_internvideo, ckpt):
    ix = create_indexer(f"internvideo:{ckpt}", trust_remote_code=True, device="cpu")
    assert fake_internvideo.loaded == [str(ckpt)]
    assert (ix.kind, ix.dim, ix.frames_per_unit, ix.source) == ("video", 16, 8, str(ckpt))

    grey = 128
    out = ix.embed_units([np.full((8, 180, 320, 3), grey, np.uint8)])
    video = fake_internvideo.model.seen[-1]
    assert video.shape == (1, 3, 8, 224, 224) and video.dtype == torch.float32
    for c in range(3):
        torch.testing.assert_close(video[0, c], torch.full((8, 224, 224), (grey / 255 - CLIP_MEAN[c]) / CLIP_STD[c]))
    assert out.shape == (1, 16)
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, atol=1e-5)


def test_v1_ckpt_layout_is_channels_then_time(fake_internvideo, ckpt):
    ix = create_indexer(f"internvideo:{ckpt}", trust_remote_code=True, device="cpu")
    frames = np.zeros((8, 240, 240, 3), np.uint8)
    frames[..., 0] = (np.arange(8) * 30)[:, None, None]  # red ramps over time
    frames[..., 2] = 200  # blue constant
    ix.embed_units([frames])
    video = fake_internvideo.model.seen[-1][0]
    for t in range(8):
        assert video[0, t].mean().item() == pytest.approx((30 * t / 255 - CLIP_MEAN[0]) / CLIP_STD[0], abs=1e-5)
        assert video[1, t].mean().item() == pytest.approx((0 - CLIP_MEAN[1]) / CLIP_STD[1], abs=1e-5)
        assert video[2, t].mean().item() == pytest.approx((200 / 255 - CLIP_MEAN[2]) / CLIP_STD[2], abs=1e-5)


def test_v1_package_missing_says_how_to_install(monkeypatch, ckpt):
    monkeypatch.setitem(sys.modules, "InternVideo", None)  # import InternVideo -> ModuleNotFoundError
    with pytest.raises(ModelUnavailableError) as err:
        create_indexer(f"internvideo:{ckpt}", trust_remote_code=True)
    message = one_line(err)
    assert "git clone https://github.com/OpenGVLab/InternVideo" in message
    assert "InternVideo1/Pretrain/Multi-Modalities-Pretraining" in message and "PYTHONPATH" in message


def test_v1_package_with_missing_dependency(monkeypatch, tmp_path, ckpt):
    package = tmp_path / "site" / "InternVideo"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("import decord_that_is_not_installed\n")
    monkeypatch.delitem(sys.modules, "InternVideo", raising=False)
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    with pytest.raises(ModelUnavailableError) as err:
        create_indexer(f"internvideo:{ckpt}", trust_remote_code=True)
    message = one_line(err)
    assert "decord_that_is_not_installed" in message and "pip install decord" in message


def test_v1_load_failure_is_one_line(fake_internvideo, ckpt):
    def broken(path):
        raise KeyError("state_dict")

    fake_internvideo.load_model = broken
    with pytest.raises(ModelUnavailableError) as err:
        create_indexer(f"internvideo:{ckpt}", trust_remote_code=True)
    assert "cannot load" in one_line(err) and "KeyError" in str(err.value)


def test_v1_missing_ckpt_file(tmp_path):
    with pytest.raises(ModelUnavailableError) as err:
        create_indexer(f"internvideo:{tmp_path / 'InternVideo-MM-L-14.ckpt'}", trust_remote_code=True)
    assert "does not exist" in one_line(err)


def test_bare_ckpt_path_is_claimed_by_internvideo(fake_internvideo, ckpt):
    ix = create_indexer(str(ckpt), trust_remote_code=True, device="cpu")
    assert (ix.name, ix.frames_per_unit) == ("internvideo", 8)


def test_module_docstring_documents_the_papers_checkpoint():
    doc = textwrap.dedent(internvideo.__doc__)
    for needle in ("InternVideo-MM-L-14.ckpt", "InternVideo.load_model", "encode_video", "PYTHONPATH",
                   "-i internvideo:/models/InternVideo-MM-L-14.ckpt --trust-remote-code"):
        assert needle in doc


def test_v1_ckpt_under_the_paper_protocol_sees_the_packages_frames(fake_internvideo, ckpt, tmp_path):
    clip = media.make_clip(tmp_path / "c.mp4", frames=30, fps=10, size=(320, 180),
                           pixels=lambda i: media.numbered_frame(i, 0, (320, 180)))
    ix = create_indexer(f"internvideo:{ckpt}", trust_remote_code=True, device="cpu", protocol="paper")
    _, units = VideoDecoder().sample(clip, ix.frame_spec)
    frames = units[0][1]
    # InternVideo.load_video: np.linspace(0, n-1, 8).astype(np.intc); short side 256, centre crop 224
    assert list(frames.indices) == np.linspace(0, 29, 8).astype(np.intc).tolist()
    assert frames.pixels.shape == (8, 224, 224, 3)
    assert [media.read_numbered_frame(f)[1] for f in frames.pixels] == list(frames.indices)
    ix.embed_units([frames.pixels])
    assert fake_internvideo.model.seen[-1].shape == (1, 3, 8, 224, 224)  # no second resize in the model's path


def load_video_pixels(frames: list[np.ndarray]) -> torch.Tensor:
    """InternVideo.load_video's video_transform pipeline after decoding, re-done here on its own (C, T, H, W):
    TensorToNumpy makes PIL RGB frames; Resize(256) keeps its default interpolation 'nearest', which
    resize_clip's PIL branch turns into PIL's BILINEAR, to short side 256 and long side int(256 * long /
    short) (no resize when the short side is 256 already); CenterCrop(224) starts at int(round((side - 224) /
    2.)); ClipToTensor fills a float64 array, casts to float32 and divides by 255; Normalize subtracts the
    CLIP mean and divides by the CLIP std in float32."""
    from PIL import Image

    clip = [Image.fromarray(np.uint8(frame)).convert("RGB") for frame in frames]
    w, h = clip[0].size
    if not ((w <= h and w == 256) or (h <= w and h == 256)):
        oh, ow = (int(256 * h / w), 256) if w < h else (256, int(256 * w / h))
        clip = [image.resize((ow, oh), Image.BILINEAR) for image in clip]
    w, h = clip[0].size
    x1, y1 = int(round((w - 224) / 2.)), int(round((h - 224) / 2.))
    clip = [image.crop((x1, y1, x1 + 224, y1 + 224)) for image in clip]
    np_clip = np.zeros([3, len(clip), 224, 224])
    for t, image in enumerate(clip):
        np_clip[:, t, :, :] = np.array(image).transpose(2, 0, 1)
    tensor = torch.from_numpy(np_clip).float().div(255)
    mean, std = torch.as_tensor(CLIP_MEAN, dtype=tensor.dtype), torch.as_tensor(CLIP_STD, dtype=tensor.dtype)
    return tensor.sub_(mean[:, None, None, None]).div_(std[:, None, None, None])


@pytest.mark.parametrize("size", SOURCE_SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_v1_paper_pixels_are_the_packages_load_video(fake_internvideo, ckpt, textured_clips, size):
    """What encode_video receives equals InternVideo.load_video's tensor from the same decoded frames (PIL
    bilinear, round() centre crop: 1280x720 and 320x180 resize to 455 wide and crop from x = 116)."""
    clip = textured_clips[size]
    ix = create_indexer(f"internvideo:{ckpt}", trust_remote_code=True, device="cpu", protocol="paper")
    _, units = VideoDecoder().sample(clip.path, ix.frame_spec)
    frames = units[0][1]
    indices = np.linspace(0, len(clip.frames) - 1, 8).astype(np.intc).tolist()
    assert list(frames.indices) == indices
    ours = ix.embed_units([frames.pixels])[0]
    seen = fake_internvideo.model.seen[-1]
    reference = load_video_pixels([clip.frames[i] for i in indices])[None]
    assert seen.shape == reference.shape == (1, 3, 8, 224, 224) and seen.dtype == reference.dtype
    assert float((seen - reference).abs().max()) <= 1e-6
    with torch.no_grad():
        expected = unit_rows(fake_internvideo.model.encode_video(reference))[0]
    assert float(np.abs(ours - expected).max()) < 1e-5  # fp32 on identical pixels


def test_v1_paper_card_states_the_filter_and_crop_its_frames_get(fake_internvideo, ckpt):
    from indexers.base import INDEXERS
    from indexers.factory import available_indexers

    available_indexers()
    ix = create_indexer(f"internvideo:{ckpt}", trust_remote_code=True, device="cpu", protocol="paper")
    card = INDEXERS.entry("internvideo").card["paper"]["size"]
    resize = ix.frame_spec.resize
    assert (resize.resample, resize.short_side, resize.crop) == ("bilinear", 256, 224)
    assert "PIL bilinear short side 256" in card and "round((side - 224) / 2)" in card and "nearest short" not in card
    assert "bilinear" in resize.describe() and "round(" in resize.describe()


# -- text towers -------------------------------------------------------------------------------------------------
def unit_rows(x: torch.Tensor) -> np.ndarray:
    x = x.double().numpy()
    return x / np.linalg.norm(x, axis=1, keepdims=True)


LONG_CAPTION = "a person slowly lifts a red cup from the table, then puts it down again beside a plate"


def test_v1_text_tower_is_the_packages_truncated_tokens_through_encode_text(fake_internvideo, ckpt):
    ix = create_indexer(f"internvideo:{ckpt}", trust_remote_code=True, device="cpu")
    captions = ["a hand holds a cup", LONG_CAPTION]
    assert len(LONG_CAPTION) + 2 > 77  # the package refuses it unless told to truncate
    out = ix.embed_texts(captions)
    # the benchmark's call: InternVideo.tokenize(caption, truncate=True), context 77
    assert fake_internvideo.tokenized == [(captions, 77, True)]
    tokens, encoded = fake_internvideo.model.texts[-1]
    assert torch.equal(tokens, fake_tokenize(captions, truncate=True))
    assert tokens[1, -1].item() == EOT
    assert out.shape == (2, 16) and out.dtype == np.float32
    np.testing.assert_allclose(out, unit_rows(encoded), rtol=0, atol=1e-6)
    assert not np.allclose(out[0], out[1])


def test_v1_caption_vectors_give_the_benchmarks_clipscore(fake_internvideo, ckpt):
    ix = create_indexer(f"internvideo:{ckpt}", trust_remote_code=True, device="cpu")
    rng = np.random.default_rng(1)
    videos = ix.embed_units([rng.integers(0, 255, (8, 224, 224, 3), dtype=np.uint8) for _ in range(2)])
    raw_videos = fake_internvideo.model.videos[-1]
    captions = ix.embed_texts(["a dog runs", "a cat sleeps on a sofa"])
    raw_captions = fake_internvideo.model.texts[-1][1]
    # compute_similarities.py: mean of cos(video 1, caption 2) and cos(video 2, caption 1), then (s + 1) / 2
    cos = torch.nn.CosineSimilarity(dim=1, eps=1e-6)
    reference = ((cos(raw_videos[:1], raw_captions[1:]) + cos(raw_videos[1:], raw_captions[:1])) / 2 + 1) / 2
    ours = ((videos[0] @ captions[1] + videos[1] @ captions[0]) / 2 + 1) / 2
    assert ours == pytest.approx(reference.item(), abs=1e-6)


def test_no_captions_embed_to_an_empty_matrix(fake_internvideo, ckpt, remote_code, tmp_path):
    v1 = create_indexer(f"internvideo:{ckpt}", trust_remote_code=True, device="cpu")
    viclip = create_indexer(f"internvideo:{tiny_viclip(tmp_path / 'tiny-viclip')}", trust_remote_code=True,
                            device="cpu")
    for ix, dim in ((v1, 16), (viclip, 6)):
        out = ix.embed_texts([])
        assert out.shape == (0, dim) and out.dtype == np.float32
    assert fake_internvideo.tokenized == [] and fake_internvideo.model.texts == []
    assert viclip.model.text_calls == []


def test_viclip_text_tower_is_get_text_features_one_caption_at_a_time(remote_code, tmp_path):
    ix = create_indexer(f"internvideo:{tiny_viclip(tmp_path / 'tiny-viclip')}", trust_remote_code=True,
                        device="cpu")
    captions = ["a cup", "two hands lift a cup"]
    out = ix.embed_texts(captions)
    calls = ix.model.text_calls
    assert [text for text, *_ in calls] == captions
    assert all(tokenizer is ix.model.tokenizer for _, tokenizer, _, _ in calls)
    shared = type(ix.model).get_text_features.__defaults__[0]
    assert all(cache is not shared for _, _, cache, _ in calls) and shared == {}
    assert out.shape == (2, 6) and out.dtype == np.float32
    np.testing.assert_allclose(out, unit_rows(torch.cat([features for *_, features in calls])), rtol=0, atol=1e-6)
    assert not np.allclose(out[0], out[1])


def test_checkpoint_without_a_text_tower_says_so_in_one_line(remote_code, tmp_path, monkeypatch):
    ix = create_indexer(f"internvideo:{tiny_viclip(tmp_path / 'tiny-viclip')}", trust_remote_code=True,
                        device="cpu")
    monkeypatch.delattr(type(ix.model), "get_text_features")
    with pytest.raises(ModelUnavailableError) as err:
        ix.embed_texts(["a cup"])
    assert "has no text tower" in one_line(err) and "get_text_features" in str(err.value)


def test_the_registry_and_both_kinds_agree_there_is_a_text_tower(fake_internvideo, ckpt, remote_code, tmp_path):
    from indexers.factory import has_text_tower
    from retrieval.search.text_query import answers_text

    viclip = tiny_viclip(tmp_path / "tiny-viclip")
    assert has_text_tower("internvideo") and has_text_tower(f"internvideo:{ckpt}")
    for spec in (f"internvideo:{ckpt}", f"internvideo:{viclip}"):
        assert answers_text(create_indexer(spec, trust_remote_code=True, device="cpu")), spec
