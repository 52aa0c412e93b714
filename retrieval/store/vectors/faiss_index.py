"""FAISS indices derived from the catalog: one per indexer, written atomically.

Below ``EXACT_LIMIT`` vectors the index is exact (``Flat``); above, an inverted-file index
(``IVF<lists>,Flat``) whose search-time parameters (``nprobe``) are stored in the sidecar JSON
and reapplied on load.  IVF-Flat keeps the full vectors, so ``vectors(ids)`` (candidate
rescoring) stays exact; at 1M 768-d vectors it answers one query in a few milliseconds with
recall@100 above 0.95 (docs/performance.md).
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import re
import threading
import uuid
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Collection

import faiss
import numpy as np

from retrieval.core.errors import one_line
from retrieval.core.files import atomic_write
from retrieval.core.signal_kinds import SEPARATOR
from retrieval.store.errors import DiskFull, is_disk_full
from retrieval.store.vectors import filtered_search

# Exact search is fast enough (and exact) until about this many vectors; beyond, an ANN index.
EXACT_LIMIT = 100_000
# k-means needs about 39 vectors a list to be stable (FAISS warns below); more only costs time,
# and training is quadratic in the list count, so a sample of this many per list is used
TRAIN_PER_LIST = 40
KMEANS_ITERATIONS = 10  # FAISS's default 25 triples training time for no measurable recall gain
TRAIN_SAMPLE = 100_000  # other trained indices (e.g. a bare PQ) learn from this many vectors
HNSW_EF_SEARCH = 256  # recall@100 needs a candidate list well above 100
ADD_CHUNK = 65_536  # rows converted and added at a time: never a second full copy of the matrix
# FAISS splits a search by query, so a few queries cannot use more threads; the idle OpenMP
# workers still wake and spin, which made one 1M-vector query 2-3x slower on a busy 2-core box
FEW_QUERIES = 20
# Exact search on a batch of queries is a matrix product; FAISS 1.15 only hands it to BLAS from
# 128,000 queries at once, so a batch of 100 against 1M vectors took 12.8 s instead of 3.9 s
# (docs/performance.md). Lowered for batches only: a single query took twice as long with it.
BLAS_FROM_QUERIES = FEW_QUERIES
FAISS_BLAS_THRESHOLD = faiss.cvar.distance_compute_blas_threshold  # as FAISS ships it
_BLAS_SWITCH = threading.Lock()  # the threshold is process-wide: one batch changes it at a time


# Sizes a factory string may ask for. FAISS allocates an IVF index's lists when it is made, before any vector:
# IVF99999999 took 150 s and 16 GB to build empty. 2^20 lists suit about 10^11 vectors (ivf_lists); a graph of
# more than 512 neighbours a vector costs more than it finds (FAISS suggests 4 to 64).
MAX_IVF_LISTS = 1 << 20
MAX_GRAPH_DEGREE = 512
_IVF = re.compile(r"IVF(\d+)")
_IMI = re.compile(r"IMI(\d+)x(\d+)")
_GRAPH = re.compile(r"(HNSW|NSG)(\d+)")


def check_factory(factory: str) -> None:
    """ValueError when ``factory`` asks for more lists, neighbours or any other count than these bounds, said
    from the string alone, before FAISS builds (and allocates) anything."""
    for lists in _IVF.findall(factory):
        if int(lists) > MAX_IVF_LISTS:
            raise ValueError(f"IVF{lists} asks for {int(lists):,} inverted lists; at most {MAX_IVF_LISTS:,}")
    for parts, bits in _IMI.findall(factory):
        if int(parts) * int(bits) > MAX_IVF_LISTS.bit_length() - 1:
            raise ValueError(f"IMI{parts}x{bits} asks for 2^{int(parts) * int(bits)} inverted lists; at most "
                             f"{MAX_IVF_LISTS:,}")
    for kind, degree in _GRAPH.findall(factory):
        if int(degree) > MAX_GRAPH_DEGREE:
            raise ValueError(f"{kind}{degree} asks for {int(degree):,} neighbours a vector; at most {MAX_GRAPH_DEGREE}")
    too_large = [n for n in re.findall(r"\d+", factory) if int(n) > MAX_IVF_LISTS]
    if too_large:
        raise ValueError(f"{too_large[0]} in {factory!r} is larger than any FAISS setting convis builds "
                         f"({MAX_IVF_LISTS:,})")


def choose_factory(count: int, dim: int) -> str:
    """FAISS factory string for a collection of ``count`` vectors (inner product on unit vectors)."""
    if count < EXACT_LIMIT:
        return "Flat"
    return f"IVF{ivf_lists(count)},Flat"


def ivf_lists(count: int) -> int:
    """Inverted lists for ``count`` vectors: the power of two nearest 2*sqrt(count) (2048 at 1M).

    Fewer, larger lists than the usual 4*sqrt(count) keep training (quadratic in the list count)
    to minutes on a small machine; a query then scans nprobe lists of about sqrt(count)/2 vectors.
    """
    return 2 ** max(4, round(math.log2(2 * math.sqrt(max(count, 1)))))


def default_search_params(factory: str, count: int) -> str:
    """Search-time parameters (FAISS ParameterSpace syntax) that reach recall@100 >= 0.95."""
    ivf = re.search(r"IVF(\d+)", factory)
    if ivf:
        nprobe = max(16, int(ivf.group(1)) // 128)
        quantizer = f",quantizer_efSearch={2 * nprobe}" if "_HNSW" in factory else ""
        return f"nprobe={nprobe}{quantizer}"
    if factory.startswith("HNSW"):
        return f"efSearch={HNSW_EF_SEARCH}"
    return ""


@dataclass
class VectorIndex:
    """A FAISS index whose ids are catalog unit ids, plus what it was built from."""

    index: faiss.Index
    factory: str
    generation: int
    search_params: str = ""  # e.g. "nprobe=16"; FAISS ParameterSpace syntax
    # what this index holds, so that a filter gathered once serves every load of the same file: when loaded, the
    # file's checksum with its size, generation and factory; when built, a fresh token
    key: str = field(default_factory=lambda: uuid.uuid4().hex)

    @classmethod
    def build(cls, ids: np.ndarray, matrix: np.ndarray, generation: int, factory: str | None = None,
              search_params: str | None = None) -> "VectorIndex":
        """Index ``matrix`` rows under ``ids``; ``factory``/``search_params`` override the automatic choice."""
        dim = matrix.shape[1] if matrix.ndim == 2 and matrix.shape[1] else 1  # (0, d): an empty index of width d
        factory = factory or choose_factory(len(ids), dim)
        check_factory(factory)
        params = default_search_params(factory, len(ids)) if search_params is None else search_params
        # IDMap2 keeps vectors retrievable by id, which rescoring candidates needs
        index = faiss.index_factory(dim, f"IDMap2,{factory}", faiss.METRIC_INNER_PRODUCT)
        if len(ids):
            if not index.is_trained:
                _train(index, matrix, factory)
            ids = np.ascontiguousarray(ids, dtype=np.int64)
            for start in range(0, len(ids), ADD_CHUNK):
                rows = slice(start, start + ADD_CHUNK)
                index.add_with_ids(np.ascontiguousarray(matrix[rows], dtype=np.float32), ids[rows])
            _enable_reconstruct(index)
        _apply(index, params)
        return cls(index, factory, generation, params)

    @property
    def size(self) -> int:
        return int(self.index.ntotal)

    @functools.cached_property
    def rows(self) -> filtered_search.Rows:
        """Where each unit id is stored (read once: a filtered search looks its ids up there)."""
        return filtered_search.Rows(faiss.vector_to_array(self.index.id_map) if self.size else np.zeros(0, np.int64))

    def search(self, queries: np.ndarray, k: int, allowed: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(scores, ids) of the ``k`` nearest units to each query row; missing slots have id -1. ``allowed``: only
        these unit ids, the filter applied inside the search (``filtered_search``); None: every unit."""
        k = max(1, min(k, self.size))
        queries = np.ascontiguousarray(np.atleast_2d(queries), dtype=np.float32)
        if allowed is not None:
            def run():
                return filtered_search.search(self.index, queries, k, allowed, self.rows, self.key)
        elif len(queries) >= FEW_QUERIES:
            return _batch_search(self.index, queries, k)
        else:
            def run():
                return self.index.search(queries, k)
        threads = faiss.omp_get_max_threads()
        if threads == 1 or len(queries) >= FEW_QUERIES:
            return run()
        faiss.omp_set_num_threads(1)
        try:
            return run()
        finally:
            faiss.omp_set_num_threads(threads)

    def vectors(self, ids: np.ndarray) -> np.ndarray:
        return self.index.reconstruct_batch(np.ascontiguousarray(ids, dtype=np.int64))

    # -- persistence --------------------------------------------------------
    def save(self, path: Path, signal: str | None = None) -> None:
        """Write index then sidecar, each to a temp file renamed into place (readers never see half).

        The sidecar records the index file's checksum: a flipped bit makes ``load`` rebuild from the catalog;
        and the ``signal`` it indexes, which ``load`` checks.
        """
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(path, lambda tmp: faiss.write_index(self.index, tmp))
            meta = {"factory": self.factory, "generation": self.generation, "count": self.size,
                    "search_params": self.search_params, "crc32": file_checksum(path),
                    **({"signal": signal} if signal is not None else {})}
            atomic_write(_meta_path(path), lambda tmp: Path(tmp).write_text(json.dumps(meta)))
        except (OSError, RuntimeError) as exc:
            if is_disk_full(exc):
                raise DiskFull("writing the FAISS index", path) from None
            if isinstance(exc, (FileExistsError, NotADirectoryError)):
                raise NotADirectoryError(f"cannot write the FAISS index {path}: {path.parent} is not a folder; "
                                         "move it away and run again") from None
            raise

    @classmethod
    def load(cls, path: Path, signal: str | None = None) -> "VectorIndex | None":
        """The saved index, or None when it is missing, torn, not the bytes its sidecar describes or its sidecar
        names another signal than ``signal``."""
        meta_path = _meta_path(path)
        try:
            if not path.is_file() or not meta_path.is_file():
                return None
            meta = json.loads(meta_path.read_text())
            if signal is not None and meta.get("signal") != signal:
                return None  # another signal's index: the caller builds this one's from the catalog
            if not _intact(path, meta.get("crc32")):
                return None  # damaged: the caller rebuilds from the catalog
            index = faiss.read_index(str(path))
        except (OSError, ValueError, RuntimeError, AttributeError):
            return None  # unreadable or torn: the caller rebuilds from the catalog
        if index.ntotal != meta.get("count"):
            return None
        # the sidecar is the record of how to search; an older one without it gets today's default
        params = meta.get("search_params")
        params = default_search_params(meta["factory"], index.ntotal) if params is None else params
        try:
            _apply(index, params)
        except ValueError:
            return None  # parameters this index does not have: rebuild rather than search wrongly
        return cls(index, meta["factory"], int(meta["generation"]), params,
                   f"{meta['crc32']}:{index.ntotal}:{meta['generation']}:{meta['factory']}")


# files this process has checksummed: (inode, size, mtime, checksum) by path. A server loads an index per
# query; hashing a 3 GB index each time would double its load time, and a replaced file has a new inode
_VERIFIED: dict[str, tuple] = {}


def _intact(path: Path, expected: str | None) -> bool:
    """Whether ``path`` holds the bytes the sidecar's checksum describes."""
    if expected is None:
        return False
    st = path.stat()
    key = (st.st_ino, st.st_size, st.st_mtime_ns, expected)
    if _VERIFIED.get(str(path)) == key:
        return True
    if file_checksum(path) != expected:
        return False
    _VERIFIED[str(path)] = key
    return True


def file_checksum(path: Path) -> str:
    """CRC-32 of a file, read in chunks: it catches every flipped bit and burst of damage up to 32 bits, and at
    about 4 GB/s (blake2b: 0.9) checking a 3 GB index of 1M 768-d vectors adds under a second to its load."""
    crc = 0
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 22), b""):
            crc = zlib.crc32(chunk, crc)
    return f"{crc:08x}"


def _batch_search(index: faiss.Index, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    with _BLAS_SWITCH:
        faiss.cvar.distance_compute_blas_threshold = min(FAISS_BLAS_THRESHOLD, BLAS_FROM_QUERIES)
        try:
            return index.search(queries, k)
        finally:
            faiss.cvar.distance_compute_blas_threshold = FAISS_BLAS_THRESHOLD


def _ivf(index: faiss.Index):
    try:
        return faiss.extract_index_ivf(index)
    except RuntimeError:
        return None  # not an inverted-file index


def _train(index: faiss.Index, matrix: np.ndarray, factory: str) -> None:
    """Train on a fixed random sample: k-means on millions of rows would take most of an hour."""
    ivf = _ivf(index)
    wanted = TRAIN_SAMPLE
    if ivf is not None:
        if len(matrix) < ivf.nlist:
            raise ValueError(f"{factory} needs at least {ivf.nlist} vectors, the collection has {len(matrix)}")
        ivf.cp.niter = KMEANS_ITERATIONS
        wanted = TRAIN_PER_LIST * ivf.nlist
        concrete = faiss.downcast_index(ivf)
        if hasattr(concrete, "do_polysemous_training"):
            # the factory turns it on for IVF-PQ; it only serves Hamming-filtered search (unused
            # here) and took 8 of 8.1 s training a 2,000-vector IVF64,PQ4
            concrete.do_polysemous_training = False
    rows = np.arange(len(matrix))
    if len(matrix) > wanted:  # seeded: rebuilding the same catalog gives the same index
        rows = np.sort(np.random.default_rng(0).choice(len(matrix), wanted, replace=False))
    index.train(np.ascontiguousarray(matrix[rows], dtype=np.float32))


def _enable_reconstruct(index: faiss.Index) -> None:
    """IVF lists are not addressable by id until a direct map exists (it is saved with the index)."""
    ivf = _ivf(index)
    if ivf is not None:
        ivf.make_direct_map()


def _apply(index: faiss.Index, params: str) -> None:
    if not params:
        return
    try:
        faiss.ParameterSpace().set_index_parameters(index, params)
    except RuntimeError as exc:
        raise ValueError(f"cannot apply search parameters {params!r}: {one_line(exc)}") from None


def index_path(index_dir: Path, signal: str, signals: Collection[str] = ()) -> Path:
    """The FAISS file of ``signal`` (a model id, or ``<text model>#<concept>``) among the index's ``signals``.

    Its name is the one indexes were built with (:func:`old_name`: characters outside ``A-Za-z0-9._-`` become
    ``_``) wherever that name can only be this signal's: a model id written with ``A-Za-z0-9._-:/`` and a concept
    written with ``A-Za-z0-9.-``, characters the old name keeps and no other character becomes. Any other signal
    adds a digest of its whole id, or ``camera:angle``, ``camera/angle`` and ``camera#angle`` would share one
    file. Model ids that differ only where the old name writes ``_`` (``a:b/c_d``, ``a:b_c/d``) each add one
    when both are among ``signals``."""
    name = old_name(signal)
    if not _keeps_old_name(signal) or shares_old_name(signal, signals):
        name = f"{name}-{hashlib.sha1(signal.encode('utf-8')).hexdigest()[:12]}"
    return index_dir / FOLDER / f"{name}.faiss"


def old_name(signal: str) -> str:
    """The file name (without ``.faiss``) every signal had before names took digests."""
    return _UNSAFE.sub("_", signal).strip("_")


def shares_old_name(signal: str, signals: Collection[str]) -> bool:
    """Whether another of ``signals`` had ``signal``'s old file name."""
    name = old_name(signal)
    return any(other != signal and old_name(other) == name for other in signals)


def _keeps_old_name(signal: str) -> bool:
    model, separator, concept = signal.partition(SEPARATOR)  # model ids never hold one
    return bool(_MODEL_CHARS.fullmatch(model) and (not separator or _CONCEPT_CHARS.fullmatch(concept)))


_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
_MODEL_CHARS = re.compile(r"[A-Za-z0-9._\-:/]*")  # hub ids, open_clip tags and paths, as model ids are written
# a concept's characters that its old name keeps and that nothing else becomes: the digits, letters, hyphens
# and dots of a ConViS key or a slug ("_" is what ":", "/" and "#" became)
_CONCEPT_CHARS = re.compile(r"[A-Za-z0-9.-]+")


FOLDER = "faiss"  # beside the catalog, in the index folder


def check_folder(index_dir: Path) -> None:
    """Refuse a run that could not write its FAISS indices at the end (``faiss`` is a file), before it starts."""
    folder = Path(index_dir) / FOLDER
    if folder.exists() and not folder.is_dir():
        raise NotADirectoryError(f"cannot write FAISS indices: {folder} is not a folder; move it away and run again")


def _meta_path(path: Path) -> Path:
    return path.with_suffix(".json")


