"""The serving side of the store section, run as a fresh process: open a FAISS file or a Lance table, answer each
query alone, and write the ids found, the latencies and this process's peak RSS.

    python -m bench.perf.store_serve SPEC.json

SPEC: {"engine": "faiss", "path": ...} or {"engine": "lance", "uri": ..., "signal": ..., "nprobes": ...,
"refine_factor": ...}, each with "queries" (a .npy file), "k" and "out" (the .npz written).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np


def open_store(spec: dict):
    if spec["engine"] == "faiss":
        return open_faiss(spec["path"])
    return open_lance(spec["uri"], spec["signal"], spec["nprobes"], spec["refine_factor"])


def open_faiss(path: str):
    from retrieval.store.vectors.faiss_index import VectorIndex

    index = VectorIndex.load(Path(path))
    if index is None:
        raise SystemExit(f"no FAISS index at {path}")
    return index


def open_lance(uri: str, signal: str, nprobes: int, refine: int):
    from retrieval.store.vectors.lance_store import LanceLocation, LanceVectors

    return LanceVectors(LanceLocation(uri), signal, nprobes=nprobes, refine_factor=refine)


def answer(store, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """(ids [q, k], seconds [q]) of each query asked alone, after one untimed query (first-call allocations)."""
    store.search(queries[:1], k)
    ids, seconds = np.full((len(queries), k), -1, np.int64), np.zeros(len(queries))
    for row, query in enumerate(queries):
        started = time.perf_counter()
        _, found = store.search(query[None, :], k)
        seconds[row] = time.perf_counter() - started
        ids[row, : found.shape[1]] = found[0, :k]
    return ids, seconds


def peak_rss_mb() -> float:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return 0.0


def main(spec_path: str) -> None:
    spec = json.loads(Path(spec_path).read_text())
    ids, seconds = answer(open_store(spec), np.load(spec["queries"]), int(spec["k"]))
    np.savez(spec["out"], ids=ids, seconds=seconds, peak_rss_mb=peak_rss_mb())


if __name__ == "__main__":
    main(sys.argv[1])
