"""Indexing throughput on this machine, local processes vs Ray: ``python -m bench.ray_throughput FOLDER``."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Sequence

from retrieval.api import Engine
from retrieval.pipeline.ray_pipeline import connect
from retrieval.pipeline.settings import IndexSettings


def _measure(folder: Path, spec: str, ray_address: str | None, workers: int) -> tuple[float, int, int]:
    with tempfile.TemporaryDirectory() as tmp:
        engine = Engine(Path(tmp) / ".convis")
        engine.indexer(spec)  # built before timing, as both paths need it in this process
        started = time.perf_counter()
        report = engine.index(folder, [spec], IndexSettings(workers=workers, ray_address=ray_address))
        return time.perf_counter() - started, report.indexed, report.frames


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Indexing throughput: local processes vs Ray on this machine")
    parser.add_argument("folder", type=Path)
    parser.add_argument("-i", "--indexer", default="efficientnet-lite0")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--workers", type=int, default=max(1, (os.cpu_count() or 2) // 2))
    args = parser.parse_args(argv)
    for name, address in (("local", None), ("ray-local", "local")):
        if address is not None:
            # started once, after the local runs (an idle Ray instance still takes CPU from them);
            # its start-up is not indexing time, the actors each run starts are
            connect(address)
        runs = [_measure(args.folder, args.indexer, address, args.workers) for _ in range(args.repeat)]
        seconds = statistics.median(r[0] for r in runs)
        clips, frames = runs[0][1], runs[0][2]
        print(json.dumps({"path": name, "clips": clips, "frames": frames, "median_s": round(seconds, 2),
                          "clips_per_min": round(60 * clips / seconds, 1),
                          "frames_per_s": round(frames / seconds, 1),
                          "runs_s": [round(r[0], 2) for r in runs]}))


if __name__ == "__main__":
    main()
