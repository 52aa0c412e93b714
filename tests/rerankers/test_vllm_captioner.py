"""Captions on vLLM: refused in one line where vLLM is not installed; where it is, the adapter hands vLLM the
family's own prompt and frames, greedy, each request's budget.

vLLM cannot be installed here, so a stand-in ``vllm`` module takes its place: its engine runs the tiny checkpoint
through transformers on exactly the request the adapter sends (the prompt text, the video, the processor
settings, the sampling parameters) and nothing else, so the answers equal the transformers captioner's only if
that request carries everything the model needs.
"""

from __future__ import annotations

import importlib.machinery
import sys
import types

import numpy as np
import pytest
import torch

from rerankers.factory import create_captioner
from rerankers.prompts.describe import describe_requests
from rerankers.vllm_captioner import VllmCaptioner, require_vllm, vllm_captioner
from tests.retrieval.cli.test_missing_model import an_index, run_all

FOLDERS = {"qwen": "qwen2_5_vl", "llava": "llava", "internvl": "internvl"}
QUESTIONS = [(request, 10 if tokens > 64 else 4) for request, tokens in describe_requests().values()]


def test_without_vllm_index_and_describe_refuse_in_one_line(tmp_path):
    if importlib.util.find_spec("vllm") is not None:
        pytest.skip("vLLM is installed here")
    index_dir = an_index(tmp_path)
    commands = [["index", str(tmp_path / "videos"), "--captioner", "qwen2.5-vl", "--captioner-backend", "vllm"],
                ["describe", str(index_dir), "--captioner", "qwen2.5-vl", "--captioner-backend", "vllm"],
                ["describe", str(index_dir), "--captioner", "qwen2.5-vl", "--captioner-backend", "tgi"]]
    ran = run_all(commands, tmp_path, HF_HUB_OFFLINE="1")
    for args, (code, output) in zip(commands[:2], ran["runs"][:2], strict=True):
        (line,) = output.strip().splitlines()
        assert code != 0 and "pip install vllm" in line, (args[0], output)
    code, output = ran["runs"][2]
    last = output.strip().splitlines()[-1]
    assert code == 2 and "unknown captioner backend 'tgi'; use hf or hf-static or vllm" in last
    assert ran["heavy"] == []  # refused before torch or transformers is imported


class FakeEngine:
    """Stands in for ``vllm.LLM``: generates each request with the checkpoint's transformers model, from the
    request alone (``_inner`` is the model and its processor, nothing of the adapter's)."""

    def __init__(self, model, processor, **kwargs):
        self.model, self.processor, self.kwargs, self.requests = model, processor, kwargs, []

    def generate(self, prompts, sampling_params, use_tqdm=True):
        self.requests += list(zip(prompts, sampling_params, strict=True))
        return [self._one(prompt, params) for prompt, params in zip(prompts, sampling_params, strict=True)]

    def _one(self, prompt: dict, params):
        assert params.temperature == 0.0  # greedy
        video = prompt["multi_modal_data"]["video"]
        kwargs = dict(prompt["mm_processor_kwargs"])
        if isinstance(video, tuple):  # (frames, metadata)
            video, metadata = video
            kwargs["video_metadata"] = [metadata]
        inputs = self.processor(text=[prompt["prompt"]], videos=[video], return_tensors="pt", **kwargs)
        with torch.inference_mode():
            out = self.model.generate(**inputs, do_sample=False, max_new_tokens=params.max_tokens,
                                      pad_token_id=self.processor.tokenizer.pad_token_id)
        text = self.processor.tokenizer.decode(out[0][inputs["input_ids"].shape[1]:], skip_special_tokens=True)
        return types.SimpleNamespace(outputs=[types.SimpleNamespace(text=text)])


@pytest.fixture
def fake_vllm(monkeypatch):
    module = types.ModuleType("vllm")
    module.__spec__ = importlib.machinery.ModuleSpec("vllm", None)
    module.SamplingParams = lambda **kw: types.SimpleNamespace(**kw)
    module.built = []
    monkeypatch.setitem(sys.modules, "vllm", module)
    return module


@pytest.mark.slow
@pytest.mark.parametrize("family", list(FOLDERS))
def test_vllm_is_handed_the_family_prompt_and_frames_and_answers_as_transformers(tiny_folders, fake_vllm, family):
    folder = str(tiny_folders[FOLDERS[family]])
    hf = create_captioner(folder)

    def engine(model, **kwargs):
        assert model == folder
        llm = FakeEngine(hf.model, hf.processor, **kwargs)
        fake_vllm.built.append(llm)
        return llm

    fake_vllm.LLM = engine
    require_vllm()  # the stand-in counts as installed
    captioner = vllm_captioner(folder)
    assert isinstance(captioner, VllmCaptioner)
    assert (captioner.model_id, captioner.revision, captioner.describe_version, captioner.frame_spec) == \
        (hf.model_id, hf.revision, hf.describe_version, hf.frame_spec)  # the same stored answers' keys
    rng = np.random.default_rng(3)
    videos = [rng.integers(0, 256, (10, 60, 80, 3), dtype=np.uint8), rng.integers(0, 256, (8, 48, 96, 3),
                                                                                   dtype=np.uint8)]
    answers = captioner.describe_each(videos, [QUESTIONS, QUESTIONS[:2]])
    assert answers == [[hf.describe(videos[0], r, n) for r, n in QUESTIONS],
                       [hf.describe(videos[1], r, n) for r, n in QUESTIONS[:2]]]
    (llm,) = fake_vllm.built
    assert llm.kwargs["limit_mm_per_prompt"] == {"video": 1}
    prompt, params = llm.requests[0]
    assert prompt["prompt"] == hf.render_request(QUESTIONS[0][0]) and params.max_tokens == QUESTIONS[0][1]
    frames = prompt["multi_modal_data"]["video"]
    frames = frames[0] if isinstance(frames, tuple) else frames
    np.testing.assert_array_equal(frames, hf._one_clip(videos[0], False))
    assert prompt["mm_processor_kwargs"]["do_sample_frames"] is False
    assert len(llm.requests) == len(QUESTIONS) + 2  # every question of both videos in one generate call


def test_the_paper_protocol_refuses_vllm(tiny_folders, fake_vllm):
    with pytest.raises(Exception, match="fast protocol only"):
        vllm_captioner(str(tiny_folders["qwen2_5_vl"]), "paper")
