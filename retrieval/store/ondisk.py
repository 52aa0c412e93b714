"""FAISS indices larger than RAM: IVF trained once, filled in shards, merged on disk, memory-mapped.

    train   an IVF index (``IVF<nlist>,SQ8`` or ``IVF<nlist>,PQ<m>``) on a sample of the collection
    fill    each shard is a copy of the trained, empty index, filled with its slice of (unit id,
            vector); shards are independent, so any Distributor (processes, Ray) can fill them
    merge   ``faiss.contrib.ondisk.merge_ondisk`` concatenates the shards' inverted lists into one
            ``OnDiskInvertedLists`` file (``index.ivfdata``) beside the index header (``index.faiss``)
    open    ``faiss.read_index(..., IO_FLAG_ONDISK_SAME_DIR)``: the lists are memory-mapped, only the
            coarse quantizer and the scalar/PQ codebooks are in RAM; the page cache holds the lists
            a query touches

IDs are catalog unit ids, stored in the inverted lists (``add_with_ids`` on the IVF index itself), so
search results need no mapping.  Everything is derived from the catalog and can be rebuilt.
Shards are filled in order and merged in order, so the merged lists hold the same entries in the
same order as one index filled with the whole collection: searches return the same neighbours.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Protocol

import faiss
import numpy as np

from retrieval.store.vectors import KMEANS_ITERATIONS, TRAIN_PER_LIST, VectorIndex, default_search_params, ivf_lists


class Distributor(Protocol):
    """Anything that maps a function over items, yielding (item, result): the pipeline's distributors."""

    def map(self, fn: Callable[[Any], Any], items: Iterable[Any]) -> Iterator[tuple[Any, Any]]: ...


INDEX_NAME = "index.faiss"
DATA_NAME = "index.ivfdata"
TRAINED_NAME = "trained.faiss"  # kept: new shards can be filled against it without retraining
META_NAME = "meta.json"  # factory, catalog generation and count, as VectorIndex's sidecar
ONDISK_THRESHOLD = 5_000_000  # vectors per indexer past which a float32 index (3 KB a 768-d vector) outgrows RAM


@dataclass(frozen=True)
class ShardTask:
    """One shard to fill: the trained index (serialized) and its slice of ids and vectors."""

    trained: np.ndarray  # faiss.serialize_index bytes
    ids: np.ndarray
    vectors: np.ndarray


def fill_shard(task: ShardTask) -> np.ndarray:
    """Runs anywhere (thread, process, Ray task): the filled shard, serialized."""
    index = faiss.deserialize_index(task.trained)
    index.add_with_ids(np.ascontiguousarray(task.vectors, dtype=np.float32),
                       np.ascontiguousarray(task.ids, dtype=np.int64))
    return faiss.serialize_index(index)


def default_factory(count: int) -> str:
    """SQ8 codes (a quarter of float32, cosine error about 1e-3) in as many lists as ``VectorIndex`` uses."""
    return f"IVF{ivf_lists(count)},SQ8"


def train_ivf(sample: np.ndarray, factory: str) -> faiss.Index:
    """An empty IVF index trained on ``sample`` (inner product: vectors are L2-normalised)."""
    sample = np.ascontiguousarray(sample, dtype=np.float32)
    index = faiss.index_factory(sample.shape[1], factory, faiss.METRIC_INNER_PRODUCT)
    ivf = faiss.extract_index_ivf(index)  # raises for a factory without inverted lists
    if len(sample) < ivf.nlist:
        raise ValueError(f"{factory} needs at least {ivf.nlist} training vectors, got {len(sample)}")
    ivf.cp.niter = KMEANS_ITERATIONS
    index.train(sample)
    return index


def training_sample(matrix: np.ndarray, nlist: int, train_size: int | None, seed: int = 0) -> np.ndarray:
    """A seeded uniform sample of rows (sorted, so a memory-mapped matrix is read front to back)."""
    count = len(matrix)
    size = min(count, train_size or TRAIN_PER_LIST * nlist)
    if size >= count:
        return np.asarray(matrix, dtype=np.float32)
    rows = np.sort(np.random.default_rng(seed).choice(count, size, replace=False))
    return np.asarray(matrix[rows], dtype=np.float32)


def build_sharded_ivf(ids: np.ndarray, matrix: np.ndarray, out_dir: str | Path, factory: str | None = None,
                      shards: int = 4, train_size: int | None = None, distributor: Distributor | None = None,
                      trained: faiss.Index | None = None, seed: int = 0, generation: int = 0) -> Path:
    """Build an on-disk IVF index of (``ids``, ``matrix``) in ``out_dir``; returns the index file.

    ``matrix`` may be a ``np.memmap`` larger than RAM: the training sample and one shard's slice at a
    time are what is read.  ``trained`` reuses an already trained index (e.g. a previous build's
    ``trained.faiss``).  The folder is built beside ``out_dir`` and renamed into place, so a reader
    never sees half an index.
    """
    ids = np.asarray(ids, dtype=np.int64)
    factory = factory or default_factory(len(ids))
    out_dir = Path(out_dir)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(dir=out_dir.parent, prefix=f".{out_dir.name}."))
    try:
        if trained is None:
            nlist = faiss.extract_index_ivf(faiss.index_factory(matrix.shape[1], factory)).nlist
            trained = train_ivf(training_sample(matrix, nlist, train_size, seed), factory)
        faiss.write_index(trained, str(work / TRAINED_NAME))
        shard_files = _fill(trained, ids, matrix, shards, work, distributor)
        _merge(work, shard_files)
        for name in shard_files:
            os.unlink(name)
        meta = {"factory": factory, "generation": generation, "count": int(len(ids)),
                "search_params": default_search_params(factory, len(ids))}
        (work / META_NAME).write_text(json.dumps(meta))
        _replace_dir(work, out_dir)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return out_dir / INDEX_NAME


def _fill(trained: faiss.Index, ids: np.ndarray, matrix: np.ndarray, shards: int, work: Path,
          distributor: Distributor | None) -> list[str]:
    """Fill the shards in parallel, each written to disk as soon as it is full; returns their files in order."""
    bounds = np.linspace(0, len(ids), max(1, shards) + 1).astype(int)
    slices = [(a, b) for a, b in zip(bounds[:-1], bounds[1:]) if b > a]
    names = [str(work / f"shard{i:04d}.faiss") for i in range(len(slices))]
    if distributor is None:
        # threads: FAISS releases the GIL while adding; each thread reads only its slice (memmap-friendly)
        def fill(i: int) -> None:
            a, b = slices[i]
            index = faiss.clone_index(trained)
            index.add_with_ids(np.ascontiguousarray(matrix[a:b], dtype=np.float32), ids[a:b])
            faiss.write_index(index, names[i])

        with ThreadPoolExecutor(max(1, min(len(slices), os.cpu_count() or 1))) as pool:
            list(pool.map(fill, range(len(slices))))
        return names
    blob = faiss.serialize_index(trained)
    tasks = [ShardTask(blob, ids[a:b], np.asarray(matrix[a:b])) for a, b in slices]
    position = {id(task): i for i, task in enumerate(tasks)}
    for task, result in distributor.map(fill_shard, tasks):
        if isinstance(result, BaseException):
            raise RuntimeError(f"filling shard {position[id(task)]} failed: {result}") from result
        faiss.write_index(faiss.deserialize_index(result), names[position[id(task)]])
    return names


def _merge(work: Path, shard_files: list[str]) -> None:
    """Concatenate the shards' lists into index.ivfdata; the header goes to index.faiss."""
    from faiss.contrib.ondisk import merge_ondisk

    index = faiss.read_index(str(work / TRAINED_NAME))
    merge_ondisk(index, shard_files, str(work / DATA_NAME))
    # the header records this path; readers open with IO_FLAG_ONDISK_SAME_DIR, which looks for the
    # data file's name beside the header, so the folder can be renamed and moved
    faiss.write_index(index, str(work / INDEX_NAME))


def _replace_dir(src: Path, dest: Path) -> None:
    if dest.exists():
        old = dest.with_name(f".{dest.name}.old")
        shutil.rmtree(old, ignore_errors=True)
        os.replace(dest, old)
        os.replace(src, dest)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.replace(src, dest)


def open_ondisk(path: str | Path, nprobe: int = 32, by_id: bool = False) -> faiss.Index:
    """The index at ``path`` with its inverted lists memory-mapped from the file beside it.

    ``by_id`` adds a hash table from unit id to list position (about 16 B per vector in RAM), so
    ``reconstruct``/``reconstruct_batch`` work; they return decoded codes, approximate for SQ8/PQ.
    ``load_vector_index`` applies the search parameters recorded at build time instead.
    """
    index = faiss.read_index(str(path), faiss.IO_FLAG_ONDISK_SAME_DIR)
    ivf = faiss.extract_index_ivf(index)
    ivf.nprobe = nprobe
    if by_id:
        ivf.set_direct_map_type(faiss.DirectMap.Hashtable)
    return index


def load_vector_index(folder: str | Path) -> VectorIndex | None:
    """An on-disk index as a ``VectorIndex`` (searched with its recorded parameters; ``vectors`` decodes
    codes, so it is approximate), or None when the folder is missing or torn (rebuild from the catalog)."""
    folder = Path(folder)
    try:
        meta = json.loads((folder / META_NAME).read_text())
        index = open_ondisk(folder / INDEX_NAME, by_id=True)
        if meta["search_params"]:
            faiss.ParameterSpace().set_index_parameters(index, meta["search_params"])
    except (OSError, ValueError, KeyError, RuntimeError):
        return None
    if index.ntotal != meta.get("count"):
        return None
    return VectorIndex(index, meta["factory"], int(meta["generation"]), meta["search_params"])


def search(index: faiss.Index, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """(scores, unit ids) like ``VectorIndex.search``; missing slots have id -1."""
    queries = np.ascontiguousarray(np.atleast_2d(queries), dtype=np.float32)
    return index.search(queries, max(1, min(k, int(index.ntotal))))
