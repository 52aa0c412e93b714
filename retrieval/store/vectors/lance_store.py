"""Vectors in Lance tables: one table per signal, in a local folder or under ``s3://``, read from disk.

A ``LanceVectors`` answers the same searches as ``faiss_index.VectorIndex`` (scores, ids; inner products of
L2-normalised vectors, best first, id -1 where fewer than k), but the vectors stay on disk: a serving process
holds the ANN index's partition centroids and whatever pages it reads, not the matrix, and several processes
(or machines, over object storage) can serve one dataset while a writer appends.

- Appends are versions: each ``append`` commits one new version atomically, skipping unit ids already held, so a
  re-run after a kill never doubles a row.  A reader stays on the version it opened until ``checkout_latest``.
- The ANN index (IVF-RQ on the dot product: RaBitQ codes, one bit a dimension, then an exact refine of the
  candidates) is trained once the table
  reaches ``ANN_FROM`` rows and retrained only when the rows grow by ``GROWTH`` since; ``maybe_reindex`` adds
  appended rows to its partitions in between (no training). Lance searches rows the index does not cover yet
  exactly, so an append is visible to a reader at once, before any index work.
- A search restricted to ``allowed`` unit ids is exact over them (a prefilter on ``unit_id`` and a flat scan of
  the rows it keeps), as FAISS's filtered search is: a filter loses nothing.
"""

from __future__ import annotations

import hashlib
import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa

# Below this many rows a search is an exact scan (as FAISS's Flat below EXACT_LIMIT); from it, IVF-RQ.
ANN_FROM = 100_000
# The ANN index is retrained when the rows have grown by this share since it was trained: until then appended rows
# join its partitions under the centroids and codebook it has, which fit them less well as the collection drifts.
GROWTH = 0.25
KMEANS_ITERATIONS = 20  # Lance's default 50: 169 s against 81 s to train on 200k x 768 (2 cores)
TRAINED_ROWS = "convis.ann_trained_rows"  # the table's config: how many rows the ANN index was trained on
# Search-time settings of the IVF-RQ index, chosen by ``convis bench perf --sections store`` for recall@10 >= 0.95
# against an exact search (docs/scaling.md): partitions probed, and candidates rescored exactly per result.
NPROBES = 32
REFINE_FACTOR = 10
# RaBitQ codes: one bit a dimension (768-d: 96 bytes a vector, as PQ with 8-d sub-vectors, whose estimates ranked
# the true neighbours lower: recall@10 0.969 against 1.0 at 1M with nprobes 16 and refine 10, docs/scaling.md), but
# at least this many bits a code: one bit of each of 16 dimensions found 33 of 40 rows' own vectors first
MIN_CODE_BITS = 128
# The ANN index kind: "rq" (IVF-RQ, above) or "pq" (IVF-PQ, a sub-vector of 8 dimensions a code byte), kept for
# ``python -m bench.perf.store --lance-index pq``, which measures the two side by side
ANN_KIND = "rq"
DIMS_PER_SUBVECTOR = 8
# Terms (an id, or a run of consecutive ids) in one prefilter: a --where keeping millions of units is searched in
# parts, each exact, and their best merged, rather than as one predicate too long to plan.
TERMS_PER_FILTER = 4_096

VECTOR = "vector"
UNIT_ID = "unit_id"
DISTANCE = "_distance"
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")


@dataclass(frozen=True)
class LanceLocation:
    """Where the Lance tables live: a local folder or an ``s3://bucket/prefix``, with the object store's settings."""

    uri: str
    storage_options: dict[str, str] = field(default_factory=dict)

    @classmethod
    def parse(cls, spec: str, index_dir: Path) -> "LanceLocation":
        """``lance`` -> INDEX_DIR/lance; ``lance:FOLDER`` (relative to the working directory); ``lance:s3://b/p``,
        whose settings come from the standard AWS environment variables."""
        kind, _, target = spec.partition(":")
        if kind != "lance":
            raise ValueError(f"{spec!r} is not a Lance location: write lance, lance:FOLDER or lance:s3://bucket/prefix")
        if not target:
            return cls(str(Path(index_dir) / "lance"))
        if target.startswith("s3://"):
            return cls(target.rstrip("/"), s3_options(os.environ))
        if "://" in target:
            raise ValueError(f"{target!r}: a Lance store is a local folder or s3://bucket/prefix")
        return cls(str(Path(target).absolute()))


def s3_options(env) -> dict[str, str]:
    """Lance's object-store settings from the standard AWS variables in ``env`` (unset ones left to defaults)."""
    names = {"AWS_ACCESS_KEY_ID": "aws_access_key_id", "AWS_SECRET_ACCESS_KEY": "aws_secret_access_key",
             "AWS_SESSION_TOKEN": "aws_session_token", "AWS_ENDPOINT_URL": "aws_endpoint",
             "AWS_ENDPOINT_URL_S3": "aws_endpoint"}
    options = {option: env[name] for name, option in names.items() if env.get(name)}
    region = env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION")
    if region:
        options["aws_region"] = region
    if options.get("aws_endpoint", "").startswith("http://"):
        options["allow_http"] = "true"
    return options


def table_name(signal: str) -> str:
    """The table of ``signal``: its readable characters and a digest of the whole id (two ids never share one)."""
    readable = _UNSAFE.sub("_", signal).strip("_")[:80]
    return f"{readable}-{hashlib.sha1(signal.encode('utf-8')).hexdigest()[:12]}"


class LanceVectors:
    """The vectors of one signal in a Lance table, read at the version opened (or last checked out)."""

    def __init__(self, location: LanceLocation, signal: str, *, nprobes: int | None = None,
                 refine_factor: int | None = None):
        """``nprobes``/``refine_factor``: the ANN search's settings (None: ``NPROBES``, ``REFINE_FACTOR``)."""
        self.location = location
        self.signal = signal
        self.nprobes = NPROBES if nprobes is None else nprobes
        self.refine_factor = REFINE_FACTOR if refine_factor is None else refine_factor
        self.name = table_name(signal)
        import lancedb  # here, not at import: the command line and the server load this module for FAISS indexes too

        self._db = lancedb.connect(location.uri, storage_options=location.storage_options or None)
        self._table = None
        self._known: tuple[int, tuple[int, bool]] = (-1, (0, False))  # (version, its facts)
        self._open()

    def _open(self) -> None:
        try:
            self._table = self._db.open_table(self.name)
        except (ValueError, FileNotFoundError):
            self._table = None  # nothing appended yet

    # -- what is held ---------------------------------------------------------
    @property
    def size(self) -> int:
        return self._facts()[0]

    @property
    def indexed(self) -> bool:
        """Whether the opened version has an ANN index (rows it does not cover are still searched exactly)."""
        return self._facts()[1]

    def _facts(self) -> tuple[int, bool]:
        """(rows, indexed) of the opened version, read once a version: a search asks both."""
        if self._table is None:
            return 0, False
        version = self._table.version
        if self._known[0] != version:
            indexed = any(VECTOR in index.columns for index in self._table.list_indices())
            self._known = (version, (int(self._table.count_rows()), indexed))
        return self._known[1]

    @property
    def version(self) -> int:
        return 0 if self._table is None else int(self._table.version)

    @property
    def dim(self) -> int | None:
        return None if self._table is None else self._table.schema.field(VECTOR).type.list_size

    def unit_ids(self) -> np.ndarray:
        if self._table is None:
            return np.zeros(0, np.int64)
        column = self._table.to_lance().to_table(columns=[UNIT_ID]).column(UNIT_ID)
        return column.to_numpy().astype(np.int64, copy=False)

    def checkout(self, version: int) -> bool:
        """Read ``version`` exactly (the one a publish recorded); False, staying where it was, when the table has
        no such version (not written yet, or cleaned up since)."""
        if self._table is None:
            self._open()
        if self._table is None:
            return False
        try:
            self._table.checkout(version)
        except (ValueError, OSError, RuntimeError):  # lancedb reports a missing version as one of these
            return False
        return True

    def checkout_latest(self) -> None:
        """Move to the newest committed version (a reader sees every append committed until now)."""
        if self._table is None:
            self._open()
        else:
            self._table.checkout_latest()

    # -- writing ----------------------------------------------------------------
    def append(self, unit_ids: np.ndarray, matrix: np.ndarray, fields: dict[str, list] | None = None) -> int:
        """Append rows as one new version; rows whose unit id is held (or repeated in ``unit_ids``) are skipped.
        Returns the version now read (unchanged when every row was held)."""
        unit_ids = np.asarray(unit_ids, dtype=np.int64)
        if len(unit_ids) == 0:
            return self.version
        matrix = np.ascontiguousarray(matrix, dtype=np.float32).reshape(len(unit_ids), -1)
        if self._table is not None:
            self._table.checkout_latest()  # skip what any writer has committed, not what this reader saw
        _, first = np.unique(unit_ids, return_index=True)
        keep = np.sort(first)
        keep = keep[~np.isin(unit_ids[keep], self.unit_ids())]
        if len(keep) == 0:
            return self.version
        rows = _rows(unit_ids[keep], matrix[keep], {name: [values[i] for i in keep]
                                                  for name, values in (fields or {}).items()})
        if self._table is None:
            try:
                self._table = self._db.create_table(self.name, rows)
            except ValueError:  # another writer created it since: append to theirs
                self._open()
                return self.append(unit_ids, matrix, fields)
        else:
            self._table.add(rows)
        return self.version

    def delete(self, unit_ids: np.ndarray) -> None:
        """Remove these units' rows (one version a part of ``TERMS_PER_FILTER`` ids)."""
        if self._table is None or len(unit_ids) == 0:
            return
        self._table.checkout_latest()
        for predicate in _predicates(np.asarray(unit_ids, dtype=np.int64)):
            self._table.delete(predicate)

    def maybe_reindex(self) -> bool:
        """Train the ANN index once past ``ANN_FROM`` rows, and again once the rows have grown by ``GROWTH`` since
        it was trained; between, rows appended since the last call join the index's partitions with the codebook
        it has (no training). Returns whether the index was trained."""
        if self._table is None:
            return False
        self._table.checkout_latest()
        rows = self.size
        if rows < ANN_FROM:
            return False
        trained = int(self._table.to_lance().config().get(TRAINED_ROWS, 0)) if self.indexed else 0
        if trained and rows <= trained * (1 + GROWTH):
            if self._index_stats().num_unindexed_rows:
                # an exact scan of the unindexed tail costs every query a read of its vectors (100k x 768: 300 MB)
                self._table.to_lance().optimize.optimize_indices()
                self._table.checkout_latest()
            return False
        from lancedb.index import BTree

        self._table.create_index(VECTOR, replace=True, config=ann_config(ANN_KIND, rows, self.dim))
        # the prefilter of a filtered search reads this rather than the whole column
        self._table.create_index(UNIT_ID, config=BTree(), replace=True)
        self._table.to_lance().update_config({TRAINED_ROWS: str(rows)})
        self._table.checkout_latest()
        return True

    def _index_stats(self):
        for index in self._table.list_indices():
            if VECTOR in index.columns:
                return self._table.index_stats(index.name)
        return None

    # -- reading ------------------------------------------------------------------
    def search(self, queries: np.ndarray, k: int, allowed: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(scores, ids) of the ``k`` nearest units to each query row, best first, id -1 where fewer; ``allowed``:
        only these unit ids, searched exactly (full recall)."""
        queries = np.ascontiguousarray(np.atleast_2d(queries), dtype=np.float32)
        k = max(1, min(k, self.size))
        if self.size == 0:
            return _empty(len(queries), k)
        if allowed is None:
            query = self._query(queries, k)
            if self.indexed:
                query = query.nprobes(self.nprobes).refine_factor(self.refine_factor)
            return _gathered(query.to_arrow(), len(queries), k)
        best = _empty(len(queries), k)
        for predicate in _predicates(np.asarray(allowed, dtype=np.int64)):
            part = self._query(queries, k).where(predicate, prefilter=True).bypass_vector_index()
            best = _merged(best, _gathered(part.to_arrow(), len(queries), k), k)
        return best

    def _query(self, queries: np.ndarray, k: int):
        vectors = queries[0] if len(queries) == 1 else list(queries)
        query = self._table.search(vectors, vector_column_name=VECTOR).distance_type("dot")
        return query.select([UNIT_ID, DISTANCE]).limit(k)

    def vectors(self, ids: np.ndarray) -> np.ndarray:
        """The vectors of unit ``ids``, in their order (KeyError naming one not held)."""
        ids = np.asarray(ids, dtype=np.int64)
        held, matrix = self._read(np.unique(ids))
        at = np.minimum(np.searchsorted(held, ids), max(len(held) - 1, 0))
        missing = held[at] != ids if len(held) else np.ones(len(ids), bool)
        if missing.any():
            raise KeyError(f"unit {int(ids[missing][0])} is not in the Lance table {self.name}")
        return matrix[at]

    def _read(self, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(unit ids, vectors) of those of ``ids`` held, by ascending unit id."""
        dim = self.dim or 0
        if self._table is None or len(ids) == 0:
            return np.zeros(0, np.int64), np.zeros((0, dim), np.float32)
        dataset = self._table.to_lance()
        parts = [dataset.to_table(columns=[UNIT_ID, VECTOR], filter=predicate) for predicate in _predicates(ids)]
        held = np.concatenate([part.column(UNIT_ID).to_numpy() for part in parts])
        matrix = np.concatenate([_matrix(part.column(VECTOR), dim) for part in parts])
        order = np.argsort(held, kind="stable")
        return held[order], matrix[order]


def partitions(rows: int) -> int:
    """IVF partitions for ``rows`` vectors: the power of two nearest sqrt(rows) (1024 at 1M, 2048 at 5M)."""
    return 2 ** max(1, round(math.log2(math.sqrt(max(rows, 1)))))


def ann_config(kind: str, rows: int, dim: int):
    """lancedb's index config for ``kind`` ("rq" or "pq") over ``rows`` ``dim``-d rows, on the dot product."""
    from lancedb.index import IvfPq, IvfRq

    common = dict(distance_type="dot", num_partitions=partitions(rows), max_iterations=KMEANS_ITERATIONS)
    if kind == "pq":
        return IvfPq(num_sub_vectors=sub_vectors(dim), **common)
    if kind == "rq":
        return IvfRq(num_bits=rq_bits(dim), **common)
    raise ValueError(f"unknown Lance index kind {kind!r}: rq or pq")


def sub_vectors(dim: int) -> int:
    """PQ sub-vectors of ``dim``: one a ``DIMS_PER_SUBVECTOR`` dimensions where that divides it, else the
    largest divisor of ``dim`` at most ``dim // DIMS_PER_SUBVECTOR`` (at least 1)."""
    wanted = max(1, dim // DIMS_PER_SUBVECTOR)
    return next(n for n in range(wanted, 0, -1) if dim % n == 0)


def rq_bits(dim: int) -> int:
    """RaBitQ bits a dimension for ``dim``-d vectors: 1, or more (up to 8) to make a code of ``MIN_CODE_BITS``."""
    return min(8, max(1, math.ceil(MIN_CODE_BITS / max(dim, 1))))


def index_name(rows: int, dim: int, kind: str | None = None) -> str:
    """The ANN index a table of ``rows`` ``dim``-d rows is given (``kind``, default ``ANN_KIND``), as the bench
    names it."""
    if (kind or ANN_KIND) == "pq":
        return f"IVF_PQ {partitions(rows)} x PQ{sub_vectors(dim)}"
    return f"IVF_RQ {partitions(rows)} x {rq_bits(dim)} bit"


def _rows(unit_ids: np.ndarray, matrix: np.ndarray, fields: dict[str, list]) -> pa.Table:
    vectors = pa.FixedSizeListArray.from_arrays(pa.array(matrix.ravel(), pa.float32()), matrix.shape[1])
    return pa.table({UNIT_ID: pa.array(unit_ids, pa.int64()), VECTOR: vectors, **fields})


def _matrix(column: pa.ChunkedArray, dim: int) -> np.ndarray:
    values = [chunk.flatten().to_numpy(zero_copy_only=False) for chunk in column.chunks]
    flat = np.concatenate(values) if values else np.zeros(0, np.float32)
    return flat.astype(np.float32, copy=False).reshape(-1, dim)


def _predicates(unit_ids: np.ndarray) -> list[str]:
    """SQL predicates on ``unit_id`` that together keep exactly ``unit_ids``: runs of consecutive ids as ranges
    (a file's units are numbered together, so a --where keeping whole files is a few runs), each predicate at most
    ``TERMS_PER_FILTER`` terms."""
    ids = np.unique(unit_ids)
    if len(ids) == 0:
        return [f"{UNIT_ID} IN (-1)"]  # nothing is kept
    breaks = np.flatnonzero(np.diff(ids) != 1) + 1
    starts, ends = ids[np.r_[0, breaks]], ids[np.r_[breaks - 1, len(ids) - 1]]
    predicates = []
    for at in range(0, len(starts), TERMS_PER_FILTER):
        lows, highs = starts[at:at + TERMS_PER_FILTER], ends[at:at + TERMS_PER_FILTER]
        single = lows == highs
        runs = zip(lows[~single], highs[~single], strict=True)
        terms = [f"({UNIT_ID} >= {lo} AND {UNIT_ID} <= {hi})" for lo, hi in runs]
        if single.any():
            terms.append(f"{UNIT_ID} IN ({', '.join(str(int(i)) for i in lows[single])})")
        predicates.append(" OR ".join(terms))
    return predicates


def _gathered(result: pa.Table, queries: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Lance's rows (one per hit, ``query_index`` saying whose) as [queries, k] scores and ids, best first."""
    scores, ids = _empty(queries, k)
    if result.num_rows == 0:
        return scores, ids
    which = (result.column("query_index").to_numpy() if "query_index" in result.column_names
             else np.zeros(result.num_rows, np.int64))
    distance = result.column(DISTANCE).to_numpy().astype(np.float32)
    unit = result.column(UNIT_ID).to_numpy()
    order = np.lexsort((distance, which))
    which, distance, unit = which[order], distance[order], unit[order]
    slot = np.arange(len(which)) - np.searchsorted(which, which)  # rank within its query
    kept = slot < k
    scores[which[kept], slot[kept]] = 1.0 - distance[kept]  # Lance's dot distance is 1 - inner product
    ids[which[kept], slot[kept]] = unit[kept]
    return scores, ids


def _merged(a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray], k: int):
    scores, ids = np.concatenate([a[0], b[0]], axis=1), np.concatenate([a[1], b[1]], axis=1)
    order = np.argsort(-scores, axis=1, kind="stable")[:, :k]
    return np.take_along_axis(scores, order, axis=1), np.take_along_axis(ids, order, axis=1)


def _empty(queries: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    return np.full((queries, k), -np.inf, np.float32), np.full((queries, k), -1, np.int64)
