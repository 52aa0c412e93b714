"""Captions on vLLM: refused in one line where vLLM is not installed; where it is, the adapter hands vLLM the
family's own prompt and frames, greedy, each request's budget.

vLLM cannot be installed here, so a stand-in ``vllm`` module takes its place: its engine runs the tiny checkpoint
through transformers on exactly the request the adapter sends (the prompt text, the video, the processor
settings, the sampling parameters) and nothing else, so the answers equal the transformers captioner's only if
that request carries everything the model needs.
"""

from __future__ import annotations

import importlib.machinery
import importlib.metadata
import json
import shutil
import sys
import types

import numpy as np
import pytest
import torch

from rerankers.base import RerankerUnavailable
from rerankers.factory import create_captioner
from rerankers.generation import VLLM_REQUIREMENT
from rerankers.prompts.describe import DESCRIBE_PROMPT_VERSION, describe_requests
from rerankers.vllm_captioner import VllmCaptioner, require_vllm, vllm_captioner
from retrieval.pipeline.describe import describer_key
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


def installed_as(monkeypatch, version: str) -> None:
    """The installed vLLM's package metadata says ``version``."""
    real = importlib.metadata.version
    monkeypatch.setattr(importlib.metadata, "version", lambda name: version if name == "vllm" else real(name))


@pytest.fixture
def fake_vllm(monkeypatch):
    module = types.ModuleType("vllm")
    module.__spec__ = importlib.machinery.ModuleSpec("vllm", None)
    module.SamplingParams = lambda **kw: types.SimpleNamespace(**kw)
    module.built = []
    monkeypatch.setitem(sys.modules, "vllm", module)
    installed_as(monkeypatch, "0.30.0")
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
    assert (captioner.model_id, captioner.revision, captioner.frame_spec) == (hf.model_id, hf.revision, hf.frame_spec)
    assert captioner.describe_version.startswith(f"{hf.describe_version}|backend=vllm|")  # stored apart from hf's
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


@pytest.fixture
def qwen_released_settings(tiny_folders, tmp_path):
    """The tiny Qwen2.5-VL with the released checkpoint's generation config (greedy off, a repetition penalty)."""
    folder = tmp_path / "tiny-qwen25"
    shutil.copytree(tiny_folders["qwen2_5_vl"], folder)
    path = folder / "generation_config.json"
    config = json.loads(path.read_text()) if path.exists() else {}
    config.update(do_sample=True, repetition_penalty=1.05, temperature=0.1, top_p=0.001, top_k=1)
    path.write_text(json.dumps(config))
    return str(folder)


def recorded_engine(fake_vllm):
    """``vllm.LLM`` and ``SamplingParams`` stand-ins keeping each request's sampling keywords, answering "a"."""
    sent: list[dict] = []
    fake_vllm.SamplingParams = lambda **kw: sent.append(kw) or kw
    reply = types.SimpleNamespace(outputs=[types.SimpleNamespace(text="a")])
    fake_vllm.LLM = lambda model, **kwargs: types.SimpleNamespace(
        generate=lambda prompts, sampling_params, use_tqdm=True: [reply] * len(prompts))
    return sent


def test_vllm_is_handed_every_generation_setting_the_transformers_captioner_decodes_with(
        qwen_released_settings, fake_vllm, monkeypatch):
    # the row path, whose one ``generate`` call shows its config (the shared path decodes under the same
    # ``_text_config``, tests/rerankers/test_unit_prefix.py, with no ``generate`` call to spy on)
    hf = create_captioner(qwen_released_settings).asked_with(share=False)
    configs = []
    generate = hf.model.generate
    monkeypatch.setattr(hf.model, "generate", lambda **kw: configs.append(kw["generation_config"]) or generate(**kw))
    video = np.random.default_rng(5).integers(0, 256, (6, 48, 64, 3), dtype=np.uint8)
    hf.describe_each([video], [QUESTIONS])
    (config,) = configs  # every question in one generation, each row stopped at its own budget
    sent = recorded_engine(fake_vllm)
    vllm_captioner(qwen_released_settings).describe_each([video], [QUESTIONS])
    eos = config.eos_token_id if isinstance(config.eos_token_id, list) else [config.eos_token_id]
    # transformers' settings in vLLM's names: greedy is temperature 0; the penalty and end tokens are the same
    as_transformers = {"temperature": 0.0 if not config.do_sample else config.temperature,
                       "repetition_penalty": config.repetition_penalty, "stop_token_ids": eos}
    assert config.repetition_penalty == 1.05 and config.do_sample is False
    assert sent == [{**as_transformers, "max_tokens": tokens} for _, tokens in QUESTIONS]
    assert config.max_new_tokens == max(tokens for _, tokens in QUESTIONS)


def test_vllm_captions_are_keyed_by_backend_and_settings_and_transformers_keys_are_unchanged(
        qwen_released_settings, fake_vllm):
    recorded_engine(fake_vllm)
    hf = create_captioner(qwen_released_settings)
    spec = hf.frame_spec
    assert hf.describe_version == f"{DESCRIBE_PROMPT_VERSION}|frames={spec.rule}:{spec.count}"  # as stored before
    captioner = vllm_captioner(qwen_released_settings)
    assert describer_key(captioner) != describer_key(hf)
    assert captioner.describe_version == f"{hf.describe_version}|backend=vllm|greedy,repetition_penalty=1.05"


@pytest.mark.parametrize("version", ["0.18.2", "0.34.0"])
def test_an_unsupported_vllm_release_refuses_at_load_in_one_line(tiny_folders, fake_vllm, monkeypatch, version):
    recorded_engine(fake_vllm)
    installed_as(monkeypatch, version)
    with pytest.raises(RerankerUnavailable) as refused:
        vllm_captioner(str(tiny_folders["qwen2_5_vl"]))
    (line,) = str(refused.value).splitlines()
    assert f"vLLM {version} is installed" in line and VLLM_REQUIREMENT in line
