"""Which attention kernels a checkpoint load asks for, and the fallback where a family refuses them."""

from __future__ import annotations

import importlib.util

import pytest
import torch

from rerankers import hf


@pytest.fixture
def flash_installed(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: object() if name == "flash_attn" else real(name, *a))


def test_flash_attention_only_on_cuda_in_half_precision_where_installed(flash_installed):
    cuda, cpu = torch.device("cuda"), torch.device("cpu")
    assert hf.attention_choice(cuda, torch.bfloat16) == "flash_attention_2"
    assert hf.attention_choice(cuda, torch.float16) == "flash_attention_2"
    assert hf.attention_choice(cuda, torch.float32) is None  # FlashAttention-2 has no fp32 kernels
    assert hf.attention_choice(cpu, torch.bfloat16) is None


def test_without_flash_attn_the_default_kernels(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "flash_attn" else real(name, *a))
    assert hf.attention_choice(torch.device("cuda"), torch.bfloat16) is None


def test_a_family_that_refuses_the_kernels_loads_with_the_default_and_says_so(flash_installed):
    asked = []

    class Refusing:
        @classmethod
        def from_pretrained(cls, source, **kwargs):
            asked.append(kwargs.get("attn_implementation"))
            if "attn_implementation" in kwargs:
                raise ValueError("this model does not support Flash Attention 2.0 yet")
            return "loaded"

    notices: list[str] = []
    loaded = hf._with_attention(Refusing, "folder", {"dtype": torch.bfloat16}, torch.device("cuda"), notices)
    assert loaded == "loaded" and asked == ["flash_attention_2", None]
    assert notices == ["flash_attention_2 unavailable here (this model does not support Flash Attention 2.0 yet); "
                       "loading with the default attention"]
