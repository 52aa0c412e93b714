"""Timing model work on whatever device it runs on: wall seconds, the GPU's memory peak, its kernels' share."""

from __future__ import annotations

import gc
import time
from typing import Callable


def cuda() -> bool:
    import torch

    return torch.cuda.is_available()


def timed(fn: Callable[[], object]) -> tuple[float, float | None]:
    """(wall seconds of ``fn()``, the GPU memory peak in GB over it; None without CUDA). The GPU is synchronised
    before and after, so queued work is neither missed nor counted."""
    import torch

    if cuda():
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    started = time.perf_counter()
    fn()
    if cuda():
        torch.cuda.synchronize()
    seconds = time.perf_counter() - started
    return seconds, (round(torch.cuda.max_memory_allocated() / 2**30, 2) if cuda() else None)


def kernel_share(fn: Callable[[], object]) -> float | None:
    """The share of a profiled ``fn()``'s wall time the GPU spent in kernels (torch.profiler; the profiler's own
    overhead lowers it a little); None without CUDA."""
    if not cuda():
        return None
    import torch
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        started = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        wall_us = (time.perf_counter() - started) * 1e6
    busy_us = sum(e.self_device_time_total for e in prof.events() if e.device_type == DeviceType.CUDA)
    return round(min(1.0, busy_us / wall_us), 3) if wall_us > 0 else None


def release() -> None:
    """Give back what a dropped model held, so the next one is measured from an empty card."""
    gc.collect()
    if cuda():
        import torch

        torch.cuda.empty_cache()


# dense bf16 tensor-core peaks (TFLOP/s, no sparsity) by a card name's words; the first that matches
PEAK_BF16_TFLOPS: tuple[tuple[tuple[str, ...], tuple[str, ...], float], ...] = (
    # (words all in the name, words none in it, peak)
    (("H200",), (), 989.0),
    (("H100",), ("PCIE", "NVL"), 989.0),  # the SXM card ("NVIDIA H100 80GB HBM3")
    (("A100",), (), 312.0),
)
UNKNOWN_CARD = "unknown card"


def card_name() -> str | None:
    """The CUDA card's name (None without CUDA)."""
    import torch

    return torch.cuda.get_device_name(0) if torch.cuda.is_available() else None


def peak_tflops(card: str | None) -> float | None:
    """The card's dense bf16 peak from ``PEAK_BF16_TFLOPS``; None for a card not in it (or none)."""
    name = (card or "").upper()
    for needed, excluded, peak in PEAK_BF16_TFLOPS:
        if name and all(w in name for w in needed) and not any(w in name for w in excluded):
            return peak
    return None


def flops(fn: Callable[[], object]) -> int:
    """Floating-point operations of ``fn()`` as the model's own ops count them (torch.utils.flop_counter: matrix
    products, convolutions, attention), whatever the device."""
    from torch.utils.flop_counter import FlopCounterMode

    with FlopCounterMode(display=False) as counter:
        fn()
    return int(counter.get_total_flops())


def mfu(operations: int, seconds: float, card: str | None) -> float | None:
    """Model FLOPs utilisation: ``operations`` over ``seconds`` against the card's bf16 peak (None: an unknown card,
    or no time measured)."""
    peak = peak_tflops(card)
    if peak is None or seconds <= 0:
        return None
    return round(operations / seconds / (peak * 1e12), 4)
