"""`python -m bench.perf.diff_latency [A B]`: what one `convis diff` statement costs, per family, with tiny models.

Tiny random checkpoints (bench/tiny/vlm.py) go through the real factory, so the figures are the pipeline's own
cost on this machine (frames, prompt, forward pass, cache), not a real model's. For each family, with and
without ``--symmetric`` and ``--fps 4``: the median over 3 runs of the time a statement takes once the model is
loaded and the clips decoded (8 statements, batch 4), the model calls a statement costs, and a check that
asking again costs none.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from bench.tiny.vlm import build_internvl, build_llava_onevision, build_qwen_vl

FAMILIES = (("qwen2-vl", build_qwen_vl), ("llava-onevision", build_llava_onevision), ("internvl", build_internvl))
STATEMENTS = 8
REPEATS = 3


def per_statement(spec: str, a: str, b: str, symmetric: bool, fps: float | None) -> tuple[float, float, list[int]]:
    """(median seconds a statement, model calls a statement, frames of each clip in the prompt)."""
    from retrieval.api import DiffRequest, Engine

    times, calls, frames = [], [], []
    for repeat in range(REPEATS):
        engine = Engine(None)
        engine.diff(DiffRequest(a, b, action="warm-up", statements={"0": "x"}, reranker=spec, symmetric=symmetric,
                                fps=fps))  # load, decode
        statements = {str(i): f"statement {repeat} {i} {symmetric} {fps}" for i in range(STATEMENTS)}
        started = time.perf_counter()
        result = engine.diff(DiffRequest(a, b, action="riding a bike", statements=statements, reranker=spec,
                                         symmetric=symmetric, fps=fps))
        times.append((time.perf_counter() - started) / STATEMENTS)
        calls.append(result.model_calls / STATEMENTS)
        again = engine.diff(DiffRequest(a, b, action="riding a bike", statements=statements, reranker=spec,
                                         symmetric=symmetric, fps=fps))
        if again.model_calls:
            raise AssertionError(f"asking again made {again.model_calls} model calls")
        frames = result.seen.to_dict()["frames_in_prompt"]
    return statistics.median(times), statistics.median(calls), frames


def main(argv: list[str]) -> None:
    a, b = argv[:2] if len(argv) >= 2 else ("examples/videos/bikes.mp4", "examples/videos/box.mp4")
    folder = Path(tempfile.mkdtemp())
    os.environ["XDG_CACHE_HOME"] = str(folder / "cache")  # a fresh answer cache: every first question is asked
    for name, build in FAMILIES:
        spec = f"{name}:{build(folder / name)}"
        for symmetric in (False, True):
            for fps in (None, 4.0):
                seconds, calls, frames = per_statement(spec, a, b, symmetric, fps)
                print(f"{name:16s} symmetric={symmetric!s:5s} fps={fps} frames={frames}: {seconds * 1000:.0f} ms a "
                      f"statement, {calls:g} model calls a statement, 0 on a repeat", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
