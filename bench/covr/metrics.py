"""TF-CoVR's composed-retrieval metric (mAP@K and Recall@K), computed exactly as its released code does.

The reference is ``compute_metrics`` in UCF-CRCV/TF-CoVR, ``src/test/aim/circo_clip.py`` (the README's test
command; the copies in ``src/test/*/circo*.py`` and ``utils*.py`` are the same code), a CIRCO-style metric:

- ``rel(k) = 1`` when the k-th prediction is one of the query's ``target_videos_ids``; ``P@k = (#rel in 1..k) / k``;
  ``AP@K = sum_{k<=K} P@k * rel(k) / min(len(target_videos_ids), K)``; mAP@K is the mean over queries,
  ``round(mean * 100, 2)``.
- Recall@K counts the single ``target_video`` in the top K: ``sum(predictions[:K] == target)``, not a 0/1 hit.
- Nothing is de-duplicated: the code's gallery holds one entry per annotation row (the ``target_video`` column), so a
  video that is the target of several rows comes back several times, and every copy counts, in AP and in Recall
  alike. A ranking with repeated ids can therefore score above 100.
- The query's own video gets ``similarity - 100`` before ranking (every copy of it), so it never reaches the top 50:
  :func:`mask_query` drops it and everything after it moves up.

Video ids are file stems without ``.mp4`` (the code keys videos by ``name.split(".")[0]``); :func:`video_id` maps
``videos/0a1b_3.mp4`` to ``0a1b_3`` for the annotations and the ranking alike. numpy only, no torch.
"""

from __future__ import annotations

import ast
import csv
import io
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Mapping, Sequence

import numpy as np

from bench.loaders import BenchDataError, check_unique, read_json
from retrieval.core.user_files import DATA_FILE_LIMIT, read_text

KS = (5, 10, 25, 50)
COLUMNS = ("query_id", "query_video", "target_video", "target_videos_ids", "modification")


@dataclass(frozen=True)
class CovrQuery:
    """One row of a TF-CoVR annotation CSV (video ids without their folder and ``.mp4``); ``targets`` keeps the
    cell's order and any repeats, as the code does."""

    query_id: str
    query_video: str
    target_video: str
    targets: tuple[str, ...]
    modification: str


def video_id(name: object) -> str:
    """``FineGD_videos/0a1b_3.mp4`` -> ``0a1b_3``: the base name without a ``.mp4`` suffix."""
    text = str(name).strip().replace("\\", "/").rsplit("/", 1)[-1]
    return text[:-4] if text.lower().endswith(".mp4") else text


# ---------------------------------------------------------------- files


def read_annotations(path: str | Path) -> list[CovrQuery]:
    """The queries of a TF-CoVR annotation CSV (columns ``query_id, query_video, target_video, target_videos_ids,
    modification``; others are ignored). ``target_videos_ids`` is a Python list literal, ``['a', 'b']``."""
    path = Path(path)
    if not path.exists():
        raise BenchDataError(f"annotations not found: {path}")
    # read as any benchmark data file is: at most DATA_FILE_LIMIT bytes, a device or a pipe refused in one line
    reader = csv.DictReader(io.StringIO(read_text(path, "annotations", DATA_FILE_LIMIT, BenchDataError), newline=""))
    try:
        missing = [c for c in COLUMNS if c not in (reader.fieldnames or [])]
        if missing:
            raise BenchDataError(f"annotations {path} lack column(s) {', '.join(missing)} "
                                 f"(need {', '.join(COLUMNS)})")
        queries = [_query(row, path, reader.line_num) for row in reader]
    except csv.Error as e:  # a field past csv's limit (128 KiB), a NUL byte: in the row after the last one read
        raise BenchDataError(f"cannot read annotations {path}, line {reader.line_num + 1}: {e}") from None
    if not queries:
        raise BenchDataError(f"annotations {path} hold no queries")
    check_unique((q.query_id for q in queries), f"annotations {path}: query_id")
    return queries


def _query(row: dict, path: Path, line: int) -> CovrQuery:
    where = f"annotations {path}, line {line}"
    values = {c: (row.get(c) or "").strip() for c in COLUMNS}
    for column in ("query_id", "query_video", "target_video"):
        if not values[column]:
            raise BenchDataError(f"{where}: empty {column}")
    return CovrQuery(values["query_id"], video_id(values["query_video"]), video_id(values["target_video"]),
                     _targets(values["target_videos_ids"], f"{where} (query_id {values['query_id']})"),
                     values["modification"])


def _targets(cell: str, where: str) -> tuple[str, ...]:
    """The code runs ``eval`` on the cell; ``ast.literal_eval`` reads the same list literals, safely."""
    try:
        value = ast.literal_eval(cell)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        value = None
    ok = (isinstance(value, (list, tuple)) and value
          and all(isinstance(v, (str, int)) and not isinstance(v, bool) for v in value))
    if not ok:
        raise BenchDataError(f"{where}: target_videos_ids {cell[:80]!r} is not a non-empty list of video ids "
                             "like ['id1', 'id2']")
    return tuple(video_id(v) for v in value)


def read_ranking(path: str | Path) -> dict[str, list[str]]:
    """A ranking file: a JSON object mapping each query_id to its video ids, best first."""
    data = read_json(path, "ranking")
    if not isinstance(data, dict):
        raise BenchDataError(f"ranking {path} is not a JSON object of query_id -> [video ids, best first]")
    ranking = {}
    for query_id, ranked in data.items():
        if not isinstance(ranked, list) or not all(
                isinstance(v, (str, int)) and not isinstance(v, bool) for v in ranked):
            raise BenchDataError(f"ranking {path}: query {query_id!r} does not map to a list of video ids")
        ranking[str(query_id).strip()] = [video_id(v) for v in ranked]
    return ranking


# ---------------------------------------------------------------- metric


def mask_query(ranked: Iterable[str], query_video: str) -> list[str]:
    """The ranking without the query's own video (every copy), as the code's ``sims -= 100 * mask`` leaves it."""
    return [v for v in ranked if v != query_video]


def _precisions(ranked: Sequence[str], targets: Iterable[str]) -> np.ndarray:
    """``P@k * rel(k)`` at every position, with the code's arithmetic (cumsum * labels / arange)."""
    wanted = set(targets)
    labels = np.array([v in wanted for v in ranked], dtype=bool)
    return np.cumsum(labels, axis=0) * labels / np.arange(1, labels.shape[0] + 1)


def average_precision_at_k(ranked: Sequence[str], targets: Sequence[str], k: int) -> float:
    """AP@K of one ranking: ``sum_{i<=K} P@i * rel(i) / min(len(targets), K)``; repeats count every time."""
    if not targets:
        raise ValueError("AP needs at least one target")
    return float(np.sum(_precisions(ranked, targets)[:k]) / min(len(targets), k))


def recall_at_k(ranked: Sequence[str], target: str, k: int) -> float:
    """How many of the top K are the single ``target_video`` (the code sums, so a repeated target counts twice)."""
    return float(sum(v == target for v in ranked[:k]))


def covr_metrics(queries: Sequence[CovrQuery], ranking: Mapping[str, Sequence[str]],
                 ks: Sequence[int] = KS) -> dict:
    """mAP@K and Recall@K (x100, two decimals) over every annotated query; a query the ranking lacks scores 0 and is
    listed under ``missing``. Ranking entries for unknown query ids are ignored and counted under ``unknown``."""
    if not queries:
        raise BenchDataError("no queries to score")
    aps: dict[int, list[float]] = {k: [] for k in ks}
    recalls: dict[int, list[float]] = {k: [] for k in ks}
    missing = []
    repeats = 0
    for q in queries:
        ranked = ranking.get(q.query_id)
        if ranked is None:
            missing.append(q.query_id)
            ranked = []
        ranked = mask_query(ranked, q.query_video)
        repeats += len(set(ranked[:max(ks, default=0)])) < len(ranked[:max(ks, default=0)])
        precisions = _precisions(ranked, q.targets)
        for k in ks:
            aps[k].append(float(np.sum(precisions[:k]) / min(len(q.targets), k)))
            recalls[k].append(recall_at_k(ranked, q.target_video, k))
    known = {q.query_id for q in queries}
    result: dict = {f"mAP@{k}": _percent(aps[k]) for k in ks}
    result.update({f"Recall@{k}": _percent(recalls[k]) for k in ks})
    result.update({"queries": len(queries), "ranked": len(queries) - len(missing), "missing": missing,
                   "unknown": sum(1 for key in ranking if key not in known), "repeated_ids": int(repeats)})
    return result


def _percent(values: list[float]) -> float:
    return round(float(np.mean(values)) * 100, 2)  # the code's rounding: of the mean x100, to 2 decimals
