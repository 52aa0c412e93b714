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
