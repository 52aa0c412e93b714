"""Timing a measurement, in a process of its own, and the facts about the machine it ran on."""

from __future__ import annotations

import multiprocessing as mp
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import replace
from typing import Callable

import faiss

from bench.perf.config import PerfConfig
from bench.perf.memory import PeakRss


@contextmanager
def clock():
    """Wall and CPU seconds of a block; CPU covers this process and the workers it starts.

    CPU over wall is how many cores the block really got: on a shared machine a pipeline can
    only overlap decoding and embedding if a second core is free.
    """
    timing = {}
    with PeakRss() as usage:
        started = time.perf_counter()
        yield timing
        timing["seconds"] = time.perf_counter() - started
    timing["cpu_s"] = round(usage.cpu_s, 2)


def _measured(fn: Callable, args: tuple, own_process: bool, torch_threads: int | None = None):
    if torch_threads:
        import torch  # torch: importing bench.perf (and so `convis --help`) stays free of it

        torch.set_num_threads(torch_threads)
    with PeakRss(own_process=own_process) as peak:
        result = fn(*args)
    if isinstance(result, list):
        return [replace(r, peak_rss_mb=round(peak.mb, 1)) for r in result]
    return replace(result, peak_rss_mb=round(peak.mb, 1))


def measure(fn: Callable, *args, isolate: bool = True, torch_threads: int | None = None):
    """Run ``fn(*args)`` (returning a dataclass with ``peak_rss_mb``) and record its peak memory.

    ``isolate`` gives it a fresh process: a clean baseline, and freed memory of earlier
    measurements (which the allocator may keep) cannot count against it.  ``torch_threads``
    sets torch's intra-op threads there first (None: torch's default, one per core).
    """
    if not isolate:
        import torch  # torch: importing bench.perf (and so `convis --help`) stays free of it

        before = torch.get_num_threads()
        try:
            return _measured(fn, args, False, torch_threads)
        finally:
            torch.set_num_threads(before)
    with ProcessPoolExecutor(max_workers=1, mp_context=mp.get_context("spawn")) as pool:
        return pool.submit(_measured, fn, args, True, torch_threads).result()


def repeated(config: PerfConfig, fn: Callable, *args, threads: int | None = None):
    """The run with the median time of ``config.repeat`` runs (each isolated); peak memory is the largest."""
    runs = [measure(fn, *args, isolate=config.isolate, torch_threads=threads) for _ in range(max(1, config.repeat))]
    key = (lambda r: r.seconds) if hasattr(runs[0], "seconds") else (lambda r: r.first_s)
    chosen = sorted(runs, key=key)[len(runs) // 2]
    peak = max(r.peak_rss_mb for r in runs)
    if len(runs) > 1 and hasattr(chosen, "detail"):
        spread = f"median of {len(runs)}: {min(map(key, runs)):.2f}-{max(map(key, runs)):.2f} s"
        chosen = replace(chosen, detail="; ".join(filter(None, [chosen.detail, spread])))
    return replace(chosen, peak_rss_mb=peak)


def torch_thread_count() -> int:
    """Torch's intra-op threads in this process, as a measurement row records them."""
    import torch  # torch: importing bench.perf (and so `convis --help`) stays free of it

    return torch.get_num_threads()


def machine_info() -> dict:
    import torch  # torch: importing bench.perf (and so `convis --help`) stays free of it

    return {
        "cpus": os.cpu_count(), "python": sys.version.split()[0], "torch": torch.__version__,
        "faiss": faiss.__version__, "torch_threads": torch.get_num_threads(),
        "faiss_threads": faiss.omp_get_max_threads(),
        "blas_threshold": faiss.cvar.distance_compute_blas_threshold,
        "memory_gb": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1),
        "load_before": load_average(), "date": time.strftime("%Y-%m-%d %H:%M"),
    }


def load_average() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())
