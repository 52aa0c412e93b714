"""A family's generation settings: read from the config transformers generates with, mapped onto vLLM's
``SamplingParams`` keywords (a stand-in records them: vLLM is not installed here), and the vLLM releases supported."""

from __future__ import annotations

from pathlib import Path

import pytest
import tomllib
from transformers import GenerationConfig

from rerankers.generation import VLLM_REQUIREMENT, GenerationSettings, sampling_params, vllm_version_problem


class RecordedParams:
    """Stands in for ``vllm.SamplingParams``: keeps the keywords it was built with."""

    def __init__(self, **kwargs):
        self.kwargs = kwargs


def qwen_greedy(max_new_tokens: int) -> GenerationConfig:
    """Qwen2.5-VL's released generation config as the transformers captioner decodes with it: greedy."""
    return GenerationConfig(do_sample=False, repetition_penalty=1.05, eos_token_id=[151645, 151643],
                            pad_token_id=151643, max_new_tokens=max_new_tokens)


def test_greedy_settings_keep_the_repetition_penalty_and_end_tokens():
    settings = GenerationSettings.of(qwen_greedy(96))
    assert settings == GenerationSettings(max_new_tokens=96, repetition_penalty=1.05, stop_token_ids=(151645, 151643))
    params = sampling_params(settings, RecordedParams)
    assert params.kwargs == {"temperature": 0.0, "max_tokens": 96, "repetition_penalty": 1.05,
                             "stop_token_ids": [151645, 151643]}
    assert settings.describe() == "greedy,repetition_penalty=1.05"


def test_sampled_settings_carry_temperature_top_p_and_top_k():
    config = GenerationConfig(do_sample=True, temperature=0.7, top_p=0.8, top_k=20, max_new_tokens=8, eos_token_id=2)
    kwargs = sampling_params(GenerationSettings.of(config), RecordedParams).kwargs
    assert kwargs == {"temperature": 0.7, "top_p": 0.8, "top_k": 20, "max_tokens": 8, "repetition_penalty": 1.0,
                      "stop_token_ids": [2]}


def test_a_setting_vllm_cannot_be_told_refuses_instead_of_being_dropped():
    config = qwen_greedy(8)
    config.no_repeat_ngram_size = 3
    settings = GenerationSettings.of(config)
    assert settings.unmapped == ("no_repeat_ngram_size=3",)
    with pytest.raises(ValueError, match="no_repeat_ngram_size=3"):
        sampling_params(settings, RecordedParams)


@pytest.mark.parametrize("version, ok", [("0.19.1", True), ("0.33.0", True), ("0.25.0.dev12+g1234", True),
                                         ("0.19.0", False), ("0.34.0", False), ("1.0.0", False), ("nightly", False)])
def test_the_supported_vllm_releases(version, ok):
    problem = vllm_version_problem(version)
    assert (problem is None) == ok
    if not ok:
        assert VLLM_REQUIREMENT in problem and "\n" not in problem


def test_the_vllm_extra_pins_the_supported_releases():
    pyproject = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())
    assert pyproject["project"]["optional-dependencies"]["vllm"] == [VLLM_REQUIREMENT]
