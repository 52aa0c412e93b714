"""Describing one clip: each family's chat, frames and pixels for a single video, and greedy text out; under the
paper protocol, each family's captions as the ConViS-Bench reference made them (frames, pixels, decoding).

Tiny random checkpoints (bench/tiny/vlm.py) load through the real factory; a spy on the processor
reads back the text and frames the model was given, one on ``generate`` the config it decoded with.
"""

from __future__ import annotations

import math

import av
import numpy as np
import pytest
import torch
from torchvision.transforms import InterpolationMode
from torchvision.transforms import functional as tvf

from rerankers.base import UnknownModelError
from rerankers.factory import create_captioner
from rerankers.prompts import describe as describe_prompt
from rerankers.prompts.describe import (
    CAPTION_REQUEST,
    CONCEPT_REQUESTS,
    DESCRIBE_KEYS,
    DESCRIBE_PROMPT_VERSION,
    INTERNVL_SYSTEM_MESSAGE,
    describe_chat,
    describe_requests,
)
from retrieval.core.concepts import CONVIS_CONCEPTS
from retrieval.media.video_decoder import VideoDecoder
from tests import media
from tests.rerankers.spies import GenerationConfigSpy, ProcessorSpy
from tests.rerankers.test_frame_parity import PER_VIDEO, reference_indices, reference_size

FOLDERS = {"qwen": "qwen2_5_vl", "llava": "llava", "internvl": "internvl", "qwen3": "qwen3_vl"}


@pytest.fixture(scope="module")
def captioners(tiny_folders):
    return {family: create_captioner(str(tiny_folders[key])) for family, key in FOLDERS.items()}


def spied(model) -> ProcessorSpy:
    spy = model.processor = ProcessorSpy(getattr(model.processor, "_inner", model.processor))
    return spy


# --------------------------------------------------------------------------- the requests

def test_one_request_per_convis_concept_under_its_key_and_the_reference_caption_request():
    assert CAPTION_REQUEST == "Describe this video in detail."
    assert set(CONCEPT_REQUESTS) == set(CONVIS_CONCEPTS)
    assert DESCRIBE_KEYS == ("caption", *CONCEPT_REQUESTS)
    assert describe_requests()["caption"][0] == CAPTION_REQUEST
    assert "the place and setting" in CONCEPT_REQUESTS["location"]
    assert "their number, age and gender" in CONCEPT_REQUESTS["main-subjects"]
    assert "the sequence of actions" in CONCEPT_REQUESTS["order-of-actions"]
    # each concept's request asks about that concept alone
    words = {key: CONVIS_CONCEPTS[key].lower() for key in CONCEPT_REQUESTS}
    for key, request in CONCEPT_REQUESTS.items():
        named = [k for k, w in words.items() if w in request.lower()]
        assert named == [key], (key, named)


@pytest.mark.parametrize("layout", ["qwen", "llava", "internvl"])
def test_every_chat_holds_one_video_then_the_request(layout):
    chat = describe_chat(layout, "Describe this video in detail.")
    user = chat[-1]
    assert user["role"] == "user"
    assert user["content"] == [{"type": "video"}, {"type": "text", "text": "Describe this video in detail."}]
    assert sum(c == {"type": "video"} for m in chat for c in m["content"] if isinstance(m["content"], list)) == 1
    with pytest.raises(ValueError):
        describe_chat(layout, "  ")


# --------------------------------------------------------------------------- what each family's model reads

RENDERED = {
    "qwen": ("<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\n"
             "<|vision_start|><|video_pad|><|vision_end|>{request}<|im_end|>\n<|im_start|>assistant\n"),
    "llava": ("<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\n<video>\n"
              "{request}<|im_end|>\n<|im_start|>assistant\n"),
    "internvl": (f"<|im_start|>system\n{INTERNVL_SYSTEM_MESSAGE}<|im_end|>\n<|im_start|>user\n<video>\n"
                 "{request}<|im_end|>\n<|im_start|>assistant\n"),
}


@pytest.mark.parametrize("family", ["qwen", "llava", "internvl"])
@pytest.mark.parametrize("key", DESCRIBE_KEYS)
def test_each_family_is_asked_in_its_own_chat_with_one_video(captioners, family, key):
    model = captioners[family]
    spy = spied(model)
    request = describe_requests()[key][0]
    model.describe(np.zeros((20, 48, 64, 3), np.uint8), request, 2)
    (kwargs, _), = spy.calls
    assert kwargs["text"] == [RENDERED[family].format(request=request)]
    (video,) = kwargs["videos"]
    assert len(video) == PER_VIDEO[family]  # one video, the family's frames of it


def test_internvl_names_each_frame_on_its_own_line_before_the_request(captioners):
    model = captioners["internvl"]
    spy = spied(model)
    model.describe(np.zeros((20, 48, 64, 3), np.uint8), CAPTION_REQUEST, 2)
    (_, out), = spy.calls
    text = model.processor.tokenizer.decode(out["input_ids"][0])
    lines = [line for line in text.split("\n") if line.startswith("Frame")]
    assert [line.split(":")[0] for line in lines] == [f"Frame{k}" for k in range(1, 17)]
    assert text.index("Frame16:") < text.index(CAPTION_REQUEST)


@pytest.mark.parametrize("family", ["qwen", "llava", "internvl"])
def test_each_family_sees_its_reference_frames_of_a_decoded_clip(tmp_path, captioners, family):
    model = captioners[family]
    clip = media.make_clip(tmp_path / "a.mp4", frames=40, fps=10, pixels=lambda i: media.numbered_frame(i, 0))
    frames = VideoDecoder(backends=["pyav"]).sample_span(clip, model.frame_spec, 0.0, None)
    spy = spied(model)
    model.describe(frames.pixels, CAPTION_REQUEST, 2, prepared=True)
    (kwargs, _), = spy.calls
    (video,) = kwargs["videos"]
    assert [media.read_numbered_frame(f) for f in video] == \
        [(0, i) for i in reference_indices(family, 40, 10, PER_VIDEO[family])]
    assert video.shape[1:3] == reference_size(family, 64, 48)


# --------------------------------------------------------------------------- the answer

@pytest.mark.parametrize("family", ["qwen", "llava", "internvl"])
def test_the_answer_is_greedy_text_of_at_most_the_token_budget(captioners, family):
    model = captioners[family]
    clip = np.random.default_rng(1).integers(0, 256, (12, 48, 64, 3), dtype=np.uint8)
    first = model.describe(clip, CAPTION_REQUEST, 6)
    assert isinstance(first, str)
    assert model.describe(clip, CAPTION_REQUEST, 6) == first  # greedy: the same answer every time
    assert len(first.encode("utf-8", "surrogatepass")) <= 6 * 3  # a byte a token, some shown as U+FFFD (3 bytes)
    assert len(model.describe(clip, CAPTION_REQUEST, 20)) >= len(first)
    with pytest.raises(ValueError):
        model.describe(clip, CAPTION_REQUEST, 0)


@pytest.mark.parametrize("family", list(FOLDERS))
def test_several_clips_are_described_in_one_generation_as_each_alone(captioners, family):
    model = captioners[family]
    rng = np.random.default_rng(2)
    clips = [rng.integers(0, 256, (12, 48, 64, 3), dtype=np.uint8),
             rng.integers(0, 256, (12, 64, 48, 3), dtype=np.uint8),  # another shape: rows of other lengths
             rng.integers(0, 256, (12, 48, 64, 3), dtype=np.uint8)]
    alone = [model.describe(clip, CAPTION_REQUEST, 6) for clip in clips]
    spy = spied(model)
    assert model.describe_many(clips, CAPTION_REQUEST, 6) == alone
    assert [len(kwargs["text"]) for kwargs, _ in spy.calls] == [min(len(clips), model.batch_size), *(
        [len(clips) - model.batch_size] if len(clips) > model.batch_size else [])]


def test_the_cache_version_names_the_prompts_and_the_frames(captioners):
    assert captioners["llava"].describe_version == f"{DESCRIBE_PROMPT_VERSION}|frames=linspace:16"
    assert captioners["internvl"].describe_version == f"{DESCRIBE_PROMPT_VERSION}|frames=midpoints:16"
    assert captioners["qwen"].describe_version == f"{DESCRIBE_PROMPT_VERSION}|frames=per-second:8"
    assert describe_prompt.DESCRIBE_PROMPT_VERSION in captioners["qwen"].describe_version


def test_captioner_specs_go_through_the_reranker_registry():
    with pytest.raises(UnknownModelError):
        create_captioner("no-such-captioner")


# --------------------------------------------------------------------------- the paper protocol's captions
# The reference's captioners, written out here from its model files and qwen-vl-utils 0.0.10 (not convis's code):
# Qwen reads the file at fps 1.0 within max_pixels 360*420 and decodes with the checkpoint's own generation config;
# InternVL's chat() samples (do_sample=True, the language model's defaults) up to 1024 new tokens.

def qwen_file_indices(n: int, fps: float) -> list[int]:
    """qwen-vl-utils 0.0.10 ``smart_nframes`` ({"fps": 1.0}) then ``torch.linspace(0, n-1, k).round()``."""
    k = n / fps * 1.0
    k = min(min(max(k, 4), (min(768, n) // 2) * 2), n)
    k = int(k // 2 * 2)
    return torch.linspace(0, n - 1, k).round().long().tolist()


def qwen_file_size(height: int, width: int) -> tuple[int, int]:
    """qwen-vl-utils 0.0.10 ``fetch_video``'s ``smart_resize`` with min_pixels 128*28*28 and max_pixels 360*420."""
    min_pixels, max_pixels = 128 * 28 * 28, 360 * 420
    h_bar, w_bar = round(height / 28) * 28, round(width / 28) * 28
    if h_bar * w_bar > max_pixels:
        beta = math.sqrt(height * width / max_pixels)
        h_bar, w_bar = math.floor(height / beta / 28) * 28, math.floor(width / beta / 28) * 28
    elif h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h_bar, w_bar = math.ceil(height * beta / 28) * 28, math.ceil(width * beta / 28) * 28
    return h_bar, w_bar


def full_size_frames(path, indices) -> list[np.ndarray]:
    with av.open(str(path)) as container:
        frames = [f.to_ndarray(format="rgb24") for f in container.decode(video=0)]
    return [frames[i] for i in indices]


# Qwen2.5-VL-Instruct ships sampling settings in its generation config; the reference's generate() kept them
QWEN_SAMPLING = {"do_sample": True, "top_k": 1, "top_p": 0.001, "temperature": 0.1, "repetition_penalty": 1.05}


def test_qwen_paper_captions_read_the_file_at_1_fps_within_360x420_pixels_with_the_checkpoints_decoding(
        tmp_path, captioners, monkeypatch):
    model = captioners["qwen"]
    for name, value in QWEN_SAMPLING.items():
        monkeypatch.setattr(model.model.generation_config, name, value)
    clip = media.make_clip(tmp_path / "a.mp4", frames=75, fps=10, size=(640, 360),
                           pixels=lambda i: media.numbered_frame(i, 0, (640, 360)))
    captioner = model.captioner("paper")
    frames = VideoDecoder(backends=["pyav"]).sample_span(clip, captioner.frame_spec, 0.0, None)
    spy, generated = spied(model), GenerationConfigSpy(model, monkeypatch)
    captioner.describe(frames.pixels, CAPTION_REQUEST, captioner.caption_tokens, prepared=True)

    (kwargs, _), = spy.calls
    assert kwargs["text"] == [RENDERED["qwen"].format(request=CAPTION_REQUEST)]
    (video,) = kwargs["videos"]
    expected = qwen_file_indices(75, 10)
    assert expected == [0, 15, 30, 44, 59, 74]  # 7.5 s at 1 fps, floored to an even count
    assert [media.read_numbered_frame(f)[1] for f in video] == expected
    height, width = qwen_file_size(360, 640)
    assert video.shape[1:3] == (height, width) == (280, 504) and height * width <= 360 * 420
    # the pixels: torchvision's antialiased bicubic of each full-size frame, as fetch_video resizes
    for got, full in zip(video, full_size_frames(clip, expected), strict=True):
        want = tvf.resize(torch.from_numpy(full).permute(2, 0, 1), [height, width],
                          interpolation=InterpolationMode.BICUBIC, antialias=True).permute(1, 2, 0).numpy()
        np.testing.assert_array_equal(got, want)
    # the checkpoint's own generation config (its sampling settings kept), 1024 new tokens
    (config,) = generated.configs
    assert {name: getattr(config, name) for name in QWEN_SAMPLING} == QWEN_SAMPLING
    assert config.max_new_tokens == captioner.caption_tokens == 1024


def test_internvl_paper_captions_sample_up_to_1024_tokens_over_its_named_frames(tmp_path, captioners, monkeypatch):
    model = captioners["internvl"]
    clip = media.make_clip(tmp_path / "a.mp4", frames=40, fps=10, pixels=lambda i: media.numbered_frame(i, 0))
    captioner = model.captioner("paper")
    frames = VideoDecoder(backends=["pyav"]).sample_span(clip, captioner.frame_spec, 0.0, None)
    spy, generated = spied(model), GenerationConfigSpy(model, monkeypatch)
    first = captioner.describe(frames.pixels, CAPTION_REQUEST, captioner.caption_tokens, prepared=True)

    (kwargs, out), = spy.calls
    (video,) = kwargs["videos"]
    assert [media.read_numbered_frame(f) for f in video] == \
        [(0, i) for i in reference_indices("internvl", 40, 10, 16)]  # get_video_index's segment midpoints
    assert video.shape[1:3] == reference_size("internvl", 64, 48)
    text = model.processor.tokenizer.decode(out["input_ids"][0])
    assert text.startswith(f"<|im_start|>system\n{INTERNVL_SYSTEM_MESSAGE}<|im_end|>")
    lines = text.split("\n")
    framed = [line.split(":")[0] for line in lines if line.startswith("Frame")]
    assert framed == [f"Frame{k}" for k in range(1, 17)]  # one "FrameK: <image>" line a frame
    assert text.index("Frame16:") < text.index(CAPTION_REQUEST)
    # chat(do_sample=True, max_new_tokens=1024): the language model's default sampling settings
    (config,) = generated.configs
    assert config.do_sample is True and config.num_beams == 1
    assert (config.temperature, config.top_k, config.top_p, config.repetition_penalty) == (1.0, 50, 1.0, 1.0)
    assert config.max_new_tokens == captioner.caption_tokens == 1024
    # seeded before each caption: the same text whatever the random state it starts from
    torch.manual_seed(1234)
    assert captioner.describe(frames.pixels, CAPTION_REQUEST, captioner.caption_tokens, prepared=True) == first


def test_llava_paper_captions_are_its_generate_greedy_256_tokens_over_its_frames(captioners, monkeypatch):
    model = captioners["llava"]
    captioner = model.captioner("paper")
    generated = GenerationConfigSpy(model, monkeypatch)
    captioner.describe(np.zeros((20, 48, 64, 3), np.uint8), CAPTION_REQUEST, captioner.caption_tokens)
    (config,) = generated.configs
    assert (config.do_sample, config.max_new_tokens) == (False, 256)
    assert captioner.frame_spec == model.frame_spec  # linspace(0, n-1, 16), as it reranks


def test_paper_captions_are_cached_apart_from_fast_ones(captioners):
    for model in captioners.values():
        fast, paper = model.captioner("fast"), model.captioner("paper")
        assert fast is model and fast.caption_tokens is None
        assert paper.describe_version != fast.describe_version and "|paper|" in paper.describe_version
        assert (paper.model_id, paper.revision) == (model.model_id, model.revision)
    assert "qwen-fps@1:768" in captioners["qwen"].captioner("paper").describe_version
    assert "decode=sampled" in captioners["internvl"].captioner("paper").describe_version
    with pytest.raises(ValueError):
        captioners["qwen"].captioner("exact")
