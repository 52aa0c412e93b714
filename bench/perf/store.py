"""The store section: FAISS (the index in RAM, as convis builds it) against Lance (a table on disk) on one clustered
synthetic collection per size.

Each engine builds the first N rows to disk, takes an append of 100k rows (half of N when smaller) the way it
can, FAISS by rebuilding from every row, Lance as one new version, and is timed until a newly opened reader holds
them. A fresh process then opens each store and answers the queries one by one (its peak RSS is what serving
costs); recall@10 is against an exact search of every row.
"""

from __future__ import annotations

import gc
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bench.perf.config import Footage, PerfConfig, Progress
from bench.perf.search import mixture
from bench.perf.sections.store import StoreResult
from retrieval.store.vectors import lance_store
from retrieval.store.vectors.faiss_index import VectorIndex
from retrieval.store.vectors.lance_store import LanceLocation, LanceVectors

K = 10
APPEND = 100_000
CHUNK = 100_000  # rows generated, written and scored at a time: the collection never sits in RAM twice
SIGNAL = "bench:store"
ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Collection:
    """N + appended rows in a .npy file (memory-mapped), the queries and their exact top-K over every row."""

    folder: Path
    vectors: int
    appended: int
    dim: int

    @property
    def matrix(self) -> np.ndarray:
        return np.load(self.folder / "data.npy", mmap_mode="r")

    @property
    def queries(self) -> Path:
        return self.folder / "queries.npy"

    def ids(self, start: int, stop: int) -> np.ndarray:
        return np.arange(start, stop, dtype=np.int64) * 3 + 10  # sparse, like catalog unit ids after deletions


def run_store(config: PerfConfig, footage: Footage, progress: Progress) -> list[StoreResult]:
    rows = []
    for size in config.sizes:
        folder = footage.scratch / f"store-{size}"
        folder.mkdir()
        try:
            data = make_collection(folder, size, min(APPEND, max(1, size // 2)), config.dim, config.single)
            progress(f"store: {size:,} x {config.dim} FAISS")
            rows.append(measure_faiss(data))
            progress(f"store: {size:,} x {config.dim} Lance")
            rows.append(measure_lance(data))
        finally:
            shutil.rmtree(folder, ignore_errors=True)
    return rows


def make_collection(folder: Path, size: int, appended: int, dim: int, queries: int) -> Collection:
    """Clustered unit vectors (``search.mixture``), written a chunk at a time, and the exact top-K of each query."""
    total = size + appended
    matrix = np.lib.format.open_memmap(folder / "data.npy", mode="w+", dtype=np.float32, shape=(total, dim))
    asked = mixture(queries, dim, seed=2)
    best_scores, best_rows = np.full((queries, K), -np.inf, np.float32), np.zeros((queries, K), np.int64)
    for start in range(0, total, CHUNK):
        chunk = mixture(min(CHUNK, total - start), dim, seed=1_000 + start // CHUNK)
        matrix[start : start + len(chunk)] = chunk
        scores = np.concatenate([best_scores, asked @ chunk.T], axis=1)
        rows = np.concatenate([best_rows, np.broadcast_to(np.arange(start, start + len(chunk)), scores[:, K:].shape)],
                              axis=1)
        top = np.argsort(-scores, axis=1, kind="stable")[:, :K]
        best_scores, best_rows = np.take_along_axis(scores, top, axis=1), np.take_along_axis(rows, top, axis=1)
    matrix.flush()
    del matrix
    np.save(folder / "queries.npy", asked)
    data = Collection(folder, size, appended, dim)
    np.save(folder / "truth.npy", data.ids(0, total)[best_rows])
    return data


def measure_faiss(data: Collection, factory: str | None = None) -> StoreResult:
    """The project's own index: ``VectorIndex.build`` with its default choice (or ``factory``, as
    ``--faiss-index`` gives it), saved; an append is a rebuild."""
    path = data.folder / "faiss" / "index.faiss"
    started = time.perf_counter()
    VectorIndex.build(data.ids(0, data.vectors), data.matrix[: data.vectors], generation=1,
                      factory=factory).save(path, SIGNAL)
    build_s = time.perf_counter() - started
    gc.collect()
    total = data.vectors + data.appended
    started = time.perf_counter()
    index = VectorIndex.build(data.ids(0, total), data.matrix[:total], generation=2, factory=factory)
    index.save(path, SIGNAL)
    factory, params = index.factory, index.search_params
    del index
    gc.collect()
    reader = VectorIndex.load(path, SIGNAL)
    assert reader is not None and reader.size == total
    visible_s = time.perf_counter() - started
    del reader
    gc.collect()
    served = serve(data, {"engine": "faiss", "path": str(path)})
    return StoreResult(data.vectors, data.dim, "FAISS", factory, params, round(build_s, 2), data.appended,
                       round(visible_s, 2), True, 0.0, *served, disk_mb=_megabytes(path.parent))


def measure_lance(data: Collection, settings: tuple[tuple[int, int], ...] = ()) -> StoreResult:
    """A Lance table written a chunk (one version) at a time and indexed; the append is one more version.  With
    ``settings`` ((nprobes, refine factor), ...) the table is served once with each, and the first that reaches
    ``RECALL`` (else the last) is the row's."""
    location = LanceLocation(str(data.folder / "lance"))
    store = LanceVectors(location, SIGNAL)
    started = time.perf_counter()
    for start in range(0, data.vectors, CHUNK):
        stop = min(start + CHUNK, data.vectors)
        store.append(data.ids(start, stop), data.matrix[start:stop])
    store.maybe_reindex()
    build_s = time.perf_counter() - started
    total = data.vectors + data.appended
    started = time.perf_counter()
    store.append(data.ids(data.vectors, total), data.matrix[data.vectors : total])
    assert LanceVectors(location, SIGNAL).size == total
    visible_s = time.perf_counter() - started
    started = time.perf_counter()
    rebuilt = store.maybe_reindex()  # the appended rows into the index's partitions, or a retraining
    reindex_s = time.perf_counter() - started
    index = lance_store.index_name(total if rebuilt else data.vectors, data.dim) if store.indexed else "none (exact)"
    (nprobes, refine), served = _served_lance(data, location, settings or ((store.nprobes, store.refine_factor),))
    params = f"nprobes={nprobes} refine={refine}" if store.indexed else ""
    return StoreResult(data.vectors, data.dim, "Lance", index, params, round(build_s, 2), data.appended,
                       round(visible_s, 2), rebuilt, round(reindex_s, 2), *served,
                       disk_mb=_megabytes(data.folder / "lance"))


RECALL = 0.95  # recall@10 the serving row asks for


def _served_lance(data: Collection, location: LanceLocation, settings) -> tuple[tuple[int, int], tuple]:
    """((nprobes, refine), ``serve()``) of the first of ``settings`` whose recall@K reaches ``RECALL``, else the
    last."""
    for nprobes, refine in settings:
        served = serve(data, {"engine": "lance", "uri": location.uri, "signal": SIGNAL, "nprobes": nprobes,
                              "refine_factor": refine})
        print(json.dumps({"nprobes": nprobes, "refine": refine, "p50_ms": served[1], "recall": served[3]}),
              file=sys.stderr, flush=True)
        if served[3] >= RECALL:
            break
    return (nprobes, refine), served


def serve(data: Collection, spec: dict) -> tuple[int, float, float, float, float]:
    """(queries, p50 ms, p99 ms, recall@K, peak RSS MB) of a fresh process answering the queries one by one."""
    out = data.folder / f"served-{spec['engine']}.npz"
    spec_path = data.folder / f"serve-{spec['engine']}.json"
    spec_path.write_text(json.dumps({**spec, "queries": str(data.queries), "k": K, "out": str(out)}))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    subprocess.run([sys.executable, "-m", "bench.perf.store_serve", str(spec_path)], check=True, env=env)
    served = np.load(out)
    ids, seconds = served["ids"], served["seconds"]
    return (len(seconds), round(float(np.median(seconds)) * 1e3, 3), round(float(np.percentile(seconds, 99)) * 1e3, 3),
            recall_at(ids, np.load(data.folder / "truth.npy")), round(float(served["peak_rss_mb"]), 1))


def recall_at(found: np.ndarray, truth: np.ndarray) -> float:
    """The mean share of each query's exact top-K among the K found."""
    hits = [len(np.intersect1d(f[f >= 0], t)) / len(t) for f, t in zip(found, truth, strict=True)]
    return round(float(np.mean(hits)), 4)


def _megabytes(folder: Path) -> float:
    return round(sum(f.stat().st_size for f in folder.rglob("*") if f.is_file()) / 2**20, 3)


def main(argv: list[str] | None = None) -> None:
    """One size and the engines asked, outside ``convis bench perf`` (``--engines lance`` where FAISS's index and a
    serving copy of it would not fit in RAM together, as at 5M x 768 on 24 GiB)."""
    import argparse
    import dataclasses
    import tempfile

    parser = argparse.ArgumentParser(prog="python -m bench.perf.store", description=main.__doc__)
    parser.add_argument("size", type=int)
    parser.add_argument("--dim", type=int, default=768)
    parser.add_argument("--engines", default="faiss,lance", help="faiss, lance or both (comma-separated)")
    parser.add_argument("--lance-settings", default="", help="nprobes:refine pairs tried in order until recall@10 "
                        "reaches 0.95, e.g. 32:10,64:20,128:40 (default: the store's own)")
    parser.add_argument("--lance-index", choices=("rq", "pq"), default=lance_store.ANN_KIND,
                        help="the Lance ANN index kind: IVF-RQ (the store's) or IVF-PQ (default: %(default)s)")
    parser.add_argument("--faiss-index", default=None, metavar="FACTORY", help="the FAISS factory string, as "
                        "`convis index --faiss-index` takes it (default: the automatic choice), e.g. IVF2048,SQ8 "
                        "where float32 would not fit in RAM")
    parser.add_argument("--scratch", type=Path, default=None, help="where the collection is written (default: "
                        "a temporary folder; 2 x size x dim x 4 bytes of disk)")
    args = parser.parse_args(argv)
    settings = tuple(tuple(int(x) for x in pair.split(":")) for pair in args.lance_settings.split(",") if pair)
    lance_store.ANN_KIND = args.lance_index  # this process builds the table; serving reads whichever index it has
    engines = {"faiss": lambda data: measure_faiss(data, args.faiss_index),
               "lance": lambda data: measure_lance(data, settings)}
    asked = [engines[name.strip()] for name in args.engines.split(",")]
    with tempfile.TemporaryDirectory(dir=args.scratch) as scratch:
        data = make_collection(Path(scratch), args.size, min(APPEND, max(1, args.size // 2)), args.dim,
                               PerfConfig().single)
        for measure in asked:
            print(json.dumps(dataclasses.asdict(measure(data))), flush=True)


if __name__ == "__main__":
    main()
