"""Near-duplicates from unit vectors: the pairs within a similarity (FAISS range search), then connected groups.

Everything here works on arrays (unit ids, vectors, each unit's file and times), so the same code groups an
index's units and the 100k synthetic ones of ``convis bench perf --sections dupes``.

- Unit pairs: each unit's ``NEIGHBOURS`` nearest units (a FAISS search in the index policy's own index for that
  many vectors, ``VectorIndex.build``: exact ``Flat`` below 100k units, IVF above, probing ``RANGE_NPROBE`` lists),
  keeping the pairs whose similarity ``(q . s + 1) / 2`` (as queries score) is at least the threshold.  Nearest
  neighbours, not a range search: a range search at a low threshold returns every pair, memory quadratic in the
  units (10k units 2.6 GB), while this holds at most ``NEIGHBOURS`` a unit at any threshold.  A copy has a handful
  of units that alike, so no pair a sane threshold keeps is left out; a unit with more than that many says the
  threshold is too low (``Pairs.saturated`` counts them, and ``dupes`` says so).
- File pairs: two files are copies when the units of the shorter one that match some unit of the other cover
  at least ``COVER`` of its duration: a re-encode matches unit for unit, and a trimmed copy is contained in the
  longer file (its units all match, the longer file's not all).
- Groups: the connected components of those pairs (``scipy.sparse.csgraph``); A~B and B~C put A, B and C in
  one group even when A and C fall short of the threshold, as re-encodes of re-encodes do.
"""

from __future__ import annotations

from dataclasses import dataclass

import faiss
import numpy as np

from retrieval.store.vectors.faiss_index import VectorIndex

COVER = 0.5  # a file pair counts when matched units cover more than this share of the shorter file
QUERY_CHUNK = 4096  # units searched a call: bounds the result buffers of a search
NEIGHBOURS = 64  # the most pairs a unit is in (beside those in which it is another unit's neighbour)
# Inverted lists a search probes in an IVF index: a copy sits next to its original, in the same list or a
# neighbouring one. On the bench's 100k units 4 lists found every planted pair, as the 16 that top-100 recall
# probes did, in a quarter of the time.
RANGE_NPROBE = 4


@dataclass(frozen=True)
class Units:
    """The units to group: ids, vectors (unit length), and per unit its file (an index into ``files``) and
    its start and end in seconds."""

    ids: np.ndarray
    vectors: np.ndarray
    file: np.ndarray
    start: np.ndarray
    end: np.ndarray

    @property
    def duration(self) -> np.ndarray:
        return np.maximum(self.end - self.start, 1e-3)  # a unit of no length still counts a little


@dataclass(frozen=True)
class Pairs:
    """Pairs of positions (``a`` < ``b``) and their similarity; ``saturated``: the units whose ``NEIGHBOURS``
    nearest were all within the threshold (more of theirs may be, left out)."""

    a: np.ndarray
    b: np.ndarray
    similarity: np.ndarray
    saturated: int = 0


def unit_pairs(vectors: np.ndarray, threshold: float, neighbours: int | None = None) -> Pairs:
    """The pairs of rows of ``vectors`` whose similarity is at least ``threshold``, each once, among each row's
    ``neighbours`` (default ``NEIGHBOURS``) nearest rows."""
    neighbours = NEIGHBOURS if neighbours is None else neighbours
    n = len(vectors)
    if n < 2:
        return Pairs(*(np.zeros(0, np.int64),) * 2, np.zeros(0, np.float32))
    matrix = np.ascontiguousarray(vectors, dtype=np.float32)
    built = VectorIndex.build(np.arange(n, dtype=np.int64), matrix, generation=0)
    index = built.index
    if "IVF" in built.factory:
        faiss.ParameterSpace().set_index_parameters(index, f"nprobe={RANGE_NPROBE}")
    radius = np.nextafter(np.float32(2 * threshold - 1), np.float32(-2))  # similarity (ip + 1) / 2, as queries
    k = min(neighbours + 1, n)  # the unit itself is its own nearest
    firsts, seconds, scores, saturated = [], [], [], 0
    for start in range(0, n, QUERY_CHUNK):
        found, ids = index.search(matrix[start:start + QUERY_CHUNK], k)
        query = np.arange(start, start + len(ids))[:, None].repeat(k, axis=1)
        close = (found >= radius) & (ids >= 0)
        saturated += int(close.all(axis=1).sum()) if k < n else 0
        close &= ids != query  # never a unit with itself
        firsts.append(np.minimum(query, ids)[close])
        seconds.append(np.maximum(query, ids)[close])
        scores.append(found[close])
    return _once(np.concatenate(firsts), np.concatenate(seconds), np.concatenate(scores), saturated)


def _once(a: np.ndarray, b: np.ndarray, inner: np.ndarray, saturated: int) -> Pairs:
    """Each pair once (both units may have found it), ordered by its first unit, then its second."""
    keys = a.astype(np.int64) * (int(b.max(initial=0)) + 1) + b
    _, first = np.unique(keys, return_index=True)
    similarity = (inner[first] + 1) / 2
    return Pairs(a[first].astype(np.int64), b[first].astype(np.int64), similarity.astype(np.float32), saturated)


def components(count: int, a: np.ndarray, b: np.ndarray) -> list[np.ndarray]:
    """The groups (arrays of positions, each sorted, of two or more) that pairs ``a``-``b`` connect among
    ``count`` items, largest first."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    if not len(a):
        return []
    graph = coo_matrix((np.ones(len(a), np.int8), (a, b)), shape=(count, count))
    _, labels = connected_components(graph, directed=False)
    order = np.argsort(labels, kind="stable")
    cuts = np.flatnonzero(np.diff(labels[order])) + 1
    groups = [g for g in np.split(order, cuts) if len(g) > 1]
    return sorted(groups, key=lambda g: (-len(g), int(g[0])))


@dataclass(frozen=True)
class FilePairs:
    """Pairs of files (``a`` < ``b``, indices into the files) that are copies: their similarity (the mean of
    the shorter file's matched units' best similarity) and each side's matched time span."""

    a: np.ndarray
    b: np.ndarray
    similarity: np.ndarray
    cover: np.ndarray  # the share of the shorter file its matched units cover
    spans: dict  # (file, other file) -> (first matched start, last matched end) in the first


def file_pairs(units: Units, pairs: Pairs, cover: float = COVER) -> FilePairs:
    """The file pairs whose matched units cover more than ``cover`` of the shorter file."""
    fa, fb = units.file[pairs.a], units.file[pairs.b]
    other = fa != fb
    ua, ub, sim = pairs.a[other], pairs.b[other], pairs.similarity[other]
    fa, fb = fa[other], fb[other]
    swap = fa > fb  # each file pair as (lower, higher)
    ua, ub = np.where(swap, ub, ua), np.where(swap, ua, ub)
    fa, fb = np.minimum(fa, fb), np.maximum(fa, fb)
    file_length = np.bincount(units.file, weights=units.duration, minlength=int(units.file.max(initial=-1)) + 1)
    width = len(file_length) + 1
    keys, pair = np.unique(fa.astype(np.int64) * width + fb, return_inverse=True)  # file pairs in key order
    first, second = keys // width, keys % width
    sides = [_side(units, pair.ravel(), side, sim, file_length[file]) for side, file in ((ua, first), (ub, second))]
    shorter = file_length[first] <= file_length[second]
    share = np.where(shorter, sides[0].share, sides[1].share)
    kept = share > cover
    spans = {**_spans(first, second, sides[0]), **_spans(second, first, sides[1])}
    return FilePairs(first[kept].astype(np.int64), second[kept].astype(np.int64),
                     np.where(shorter, sides[0].best, sides[1].best)[kept].astype(np.float32),
                     share[kept].astype(np.float32), spans)


@dataclass(frozen=True)
class _Side:
    """One side of each file pair: the share of its file its matched units cover, their mean best similarity, and
    the span from the first matched start to the last matched end."""

    share: np.ndarray
    best: np.ndarray
    start: np.ndarray
    end: np.ndarray


def _spans(file: np.ndarray, other: np.ndarray, side: "_Side") -> dict:
    keys = zip(file.tolist(), other.tolist(), strict=True)
    return dict(zip(keys, zip(side.start.tolist(), side.end.tolist(), strict=True), strict=True))


def _side(units: Units, pair: np.ndarray, unit: np.ndarray, similarity: np.ndarray, length: np.ndarray) -> _Side:
    """Per file pair (``pair``: each unit pair's), its side's matched units (``unit``) summed: arrays, not a loop
    over file pairs, which at a low threshold number as many as the unit pairs."""
    count = len(length)
    keys = pair.astype(np.int64) * len(units.duration) + unit
    order = np.argsort(keys, kind="stable")
    firsts = np.flatnonzero(np.r_[True, keys[order][1:] != keys[order][:-1]]) if len(order) else order
    best = np.maximum.reduceat(similarity[order], firsts) if len(order) else similarity[:0]  # each matched unit's
    matched, owner = unit[order][firsts], pair[order][firsts]
    start, end = np.full(count, np.inf), np.full(count, -np.inf)
    np.minimum.at(start, owner, units.start[matched])
    np.maximum.at(end, owner, units.end[matched])
    share = np.bincount(owner, weights=units.duration[matched], minlength=count) / np.maximum(length, 1e-12)
    mean = np.bincount(owner, weights=best, minlength=count) / np.maximum(np.bincount(owner, minlength=count), 1)
    return _Side(share, mean, start, end)


def best_each(count: int, a: np.ndarray, b: np.ndarray, similarity: np.ndarray) -> np.ndarray:
    """Each of ``count`` items' highest similarity in pairs ``a``-``b`` (0 where it has none)."""
    best = np.zeros(count, np.float32)
    np.maximum.at(best, a, similarity)
    np.maximum.at(best, b, similarity)
    return best
