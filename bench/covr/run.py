"""`convis bench covr run`: convis end to end on a folder laid out like TF-CoVR's release, in its ranking format.

The folder holds the annotation CSV and the videos (``<id>.mp4``, in ``videos/`` or beside the CSV). convis
indexes the videos, then asks one composed query a row: the row's ``query_video`` as the anchor, its
``modification`` as the change, cleaned as the reference cleans it (``bench.covr.caption``). What is ranked is
TF-CoVR's gallery (``FineGDDataset``, ``src/data/finegd_test.py``): the CSV's ``target_video`` column, one entry
a row, repeats kept. A video that is the target of n rows is n gallery entries with one score, so it takes n
places in a row of the ranking; the code's ``compute_metrics`` counts every copy, and ``bench.covr.metrics``
does the same. A video's score is its best unit's place; the query's own video, which the code sinks to the
bottom with ``similarity - 100``, is left out (the metric drops it wherever it stands). The top 50 entries are
written as ``{query_id: [video ids, best first]}`` and scored with ``bench.covr.metrics``.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping, Sequence

from bench.covr.caption import modification_text
from bench.covr.metrics import CovrQuery, covr_metrics, read_annotations, video_id
from bench.loaders import BenchDataError
from retrieval.core.defaults import MAX_K  # the most results one query returns (QueryRequest refuses more)

TOP = 50  # TF-CoVR keeps the top 50 of each ranking


@dataclass(frozen=True)
class CovrRun:
    dataset: Path
    index_dir: Path
    indexers: tuple[str, ...] = ()
    captions: Path | None = None
    change_weight: float = 1.0


def find_layout(dataset: Path) -> tuple[Path, Path]:
    """(the annotation CSV, the videos folder): the folder's one CSV, and ``videos/`` if it exists, else the
    folder itself."""
    csvs = sorted(dataset.glob("*.csv"))
    if len(csvs) != 1:
        raise BenchDataError(f"{dataset} must hold one annotation CSV, found {len(csvs)}")
    videos = dataset / "videos"
    return csvs[0], videos if videos.is_dir() else dataset


def run_covr(run: CovrRun, progress: Callable[[str], None] = lambda message: None) -> dict:
    """Index the dataset's videos, rank the gallery for every query and score the ranking; writes
    ``ranking.json`` in the index folder and returns the metrics with the ranking's path."""
    from retrieval.api import Engine
    from retrieval.pipeline.settings import IndexSettings

    annotations, videos = find_layout(run.dataset)
    queries = read_annotations(annotations)
    by_id = {video_id(p.name): p for p in videos.iterdir() if p.is_file()}
    counts = gallery(queries, by_id, videos)
    engine = Engine(run.index_dir)
    progress(f"indexing {videos}")
    engine.index(videos, list(run.indexers), IndexSettings(captions=run.captions))
    ranking = {}
    for i, query in enumerate(queries, 1):
        progress(f"query {i}/{len(queries)}: {query.query_id}")
        ranking[query.query_id] = rank_query(engine, query, by_id, counts, run.change_weight)
    path = run.index_dir / "ranking.json"
    path.write_text(json.dumps(ranking, indent=1))
    return {"ranking": str(path), **covr_metrics(queries, ranking)}


def gallery(queries: Sequence[CovrQuery], by_id: Mapping[str, Path], videos: Path) -> Counter:
    """How many gallery entries each video is: the rows it is the ``target_video`` of."""
    counts = Counter(q.target_video for q in queries)
    absent = [v for v in counts if v not in by_id]
    if absent:
        raise BenchDataError(f"{len(absent)} target video(s) of the gallery are not in {videos}, e.g. {absent[0]}")
    return counts


def rank_query(engine, query: CovrQuery, by_id: Mapping[str, Path], counts: Mapping[str, int],
               change_weight: float = 1.0) -> list[str]:
    """The top ``TOP`` gallery entries for one row; more hits are asked for until they fill it, every gallery
    entry is ranked, the index runs out or a query returns its most (``MAX_K``)."""
    anchor = by_id.get(query.query_video)
    if anchor is None:
        raise BenchDataError(f"query {query.query_id}: its video {query.query_video} is not in the dataset")
    from retrieval.api import QueryRequest
    from retrieval.search.compose import Change

    change = Change(modification_text(query.modification), change_weight)
    entries = sum(n for vid, n in counts.items() if vid != query.query_video)  # the query's own are never ranked
    k = min(TOP * 4, MAX_K)
    while True:
        hits = engine.query(QueryRequest(anchor, (), k=k, change=change)).hits
        ranked = gallery_ranking([video_id(h.path) for h in hits], counts, query.query_video)
        if len(ranked) >= min(TOP, entries) or len(hits) < k or k == MAX_K:
            return ranked[:TOP]
        k = min(k * 4, MAX_K)


def gallery_ranking(ids: Sequence[str], counts: Mapping[str, int], query_video: str) -> list[str]:
    """Gallery entries in the order of their videos' best hits: each video as many times as it is an entry;
    videos outside the gallery and the query's own are not entries."""
    ranked = []
    for vid in dict.fromkeys(ids):
        if vid != query_video:
            ranked += [vid] * counts.get(vid, 0)
    return ranked
