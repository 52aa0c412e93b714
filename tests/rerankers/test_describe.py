"""Describing one clip: each family's chat, frames and pixels for a single video, and greedy text out.

Tiny random checkpoints (bench/tiny/vlm.py) load through the real factory; a spy on the processor
reads back the text and frames the model was given.
"""

from __future__ import annotations

import numpy as np
import pytest

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
from tests.rerankers.spies import ProcessorSpy
from tests.rerankers.test_frame_parity import PER_VIDEO, reference_indices, reference_size

FOLDERS = {"qwen": "qwen2_5_vl", "llava": "llava", "internvl": "internvl"}


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


@pytest.mark.parametrize("family", ["qwen", "llava", "internvl"])
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
