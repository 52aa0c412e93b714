"""The weights check every reranker build starts with: missing weights are one line (exit code 1) that names the
model and the small model a CPU runs, told before anything loads; a present folder passes."""

from __future__ import annotations

import socket

import pytest

from rerankers.base import RerankerUnavailable, UnknownModelError
from rerankers.factory import check_weights, create_reranker
from rerankers.hf import cpu_release


def closed_port() -> int:
    """A local port nothing listens on: connecting to it is refused at once."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def refusal(spec: str) -> RerankerUnavailable:
    with pytest.raises(RerankerUnavailable) as err:
        check_weights(spec)
    assert err.value.exit_code == 1 and "\n" not in str(err.value)
    return err.value


def test_the_cpu_model_is_the_smallest_registered_checkpoint():
    assert cpu_release().name == "llava-onevision-0.5b"


def test_hub_weights_missing_offline_name_the_model_and_the_cpu_model(empty_cache, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    line = refusal("qwen2.5-vl").public()
    assert line.startswith("qwen2.5-vl: cannot load 'Qwen/Qwen2.5-VL-7B-Instruct'")
    assert "HF_HUB_OFFLINE is set" in line and "llava-onevision-0.5b" in line


def test_an_unreachable_hub_is_one_line_without_retries(empty_cache, monkeypatch):
    port = closed_port()
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr("huggingface_hub.constants.ENDPOINT", f"http://127.0.0.1:{port}")
    line = refusal("qwen2-vl:convis-tests/no-such-model").public()
    assert f"the model hub (127.0.0.1:{port}) is unreachable" in line and "llava-onevision-0.5b" in line


def test_the_cpu_model_names_no_other_when_it_is_missing(empty_cache, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    line = refusal("llava-onevision-0.5b").public()
    assert "llava-hf/llava-onevision-qwen2-0.5b-ov-hf" in line and "try" not in line


@pytest.mark.parametrize("spec", ["qwen2.5-vl:/no/such/weights", "/no/such/weights"])
def test_a_folder_that_is_not_there_is_refused(spec):
    assert "llava-onevision-0.5b" in refusal(spec).public()


def test_a_present_folder_passes_and_an_unknown_name_is_a_usage_error(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    for spec in (f"qwen2.5-vl:{tmp_path}", str(tmp_path)):  # whether it holds a checkpoint is said when it builds
        check_weights(spec)
    with pytest.raises(UnknownModelError) as err:
        check_weights("gpt-vision")
    assert err.value.exit_code == 2


def test_building_checks_first(empty_cache, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(RerankerUnavailable, match="HF_HUB_OFFLINE is set"):
        create_reranker("qwen2.5-vl")
