"""The GPU measuring helpers: a run's own operations counted, the card's bf16 peak, MFU from both."""

from __future__ import annotations

import pytest
import torch

from bench.perf import gpu


@pytest.mark.parametrize("card, peak", [("NVIDIA H100 80GB HBM3", 989.0), ("NVIDIA H200", 989.0),
                                        ("NVIDIA A100-SXM4-80GB", 312.0), ("NVIDIA A100 80GB PCIe", 312.0),
                                        ("NVIDIA H100 PCIe", None), ("NVIDIA L4", None), (None, None)])
def test_the_cards_bf16_peak_comes_from_its_name(card, peak):
    assert gpu.peak_tflops(card) == peak


def test_the_operations_of_a_run_are_counted_from_its_ops():
    a, b = torch.ones(8, 16), torch.ones(16, 4)
    assert gpu.flops(lambda: a @ b) == 2 * 8 * 16 * 4


def test_mfu_is_operations_a_second_over_the_peak_and_none_for_an_unknown_card():
    assert gpu.mfu(int(989e12), 2.0, "NVIDIA H200") == 0.5
    assert gpu.mfu(10**15, 1.0, "NVIDIA L4") is None
    assert gpu.mfu(10**15, 0.0, "NVIDIA H200") is None


def test_without_cuda_there_is_no_card_and_no_kernel_share(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert gpu.card_name() is None and gpu.kernel_share(lambda: None) is None
