"""`convis bench covr run`: convis end to end on a folder laid out like TF-CoVR's release, in its ranking format.

The folder holds the annotation CSV and the videos (``<id>.mp4``, in ``videos/`` or beside the CSV). convis
indexes the videos, then asks one composed query a row: the row's ``query_video`` as the anchor, its
``modification`` as the change, the top 50 files (each file once, by its best unit) as the ranking. The
ranking is written as ``{query_id: [video ids, best first]}`` and scored with ``bench.covr.metrics``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from bench.covr.metrics import CovrQuery, covr_metrics, read_annotations, video_id
from bench.loaders import BenchDataError

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
    """Index the dataset's videos, rank every query and score the ranking; writes ``ranking.json`` in the index
    folder and returns the metrics with the ranking's path."""
    from retrieval.engine import Engine
    from retrieval.pipeline.settings import IndexSettings
    from retrieval.search.compose import Change

    annotations, videos = find_layout(run.dataset)
    queries = read_annotations(annotations)
    engine = Engine(run.index_dir)
    progress(f"indexing {videos}")
    engine.index(videos, list(run.indexers), IndexSettings(captions=run.captions))
    by_id = {video_id(p.name): p for p in videos.iterdir() if p.is_file()}
    ranking = {}
    for i, query in enumerate(queries, 1):
        progress(f"query {i}/{len(queries)}: {query.query_id}")
        ranking[query.query_id] = rank_query(engine, query, by_id, Change(query.modification, run.change_weight))
    path = run.index_dir / "ranking.json"
    path.write_text(json.dumps(ranking, indent=1))
    return {"ranking": str(path), **covr_metrics(queries, ranking)}


def rank_query(engine, query: CovrQuery, by_id: dict[str, Path], change) -> list[str]:
    """The top ``TOP`` video ids for one row: each file once, at its best unit's place."""
    anchor = by_id.get(video_id(query.query_video))
    if anchor is None:
        raise BenchDataError(f"query {query.query_id}: its video {query.query_video} is not in the dataset")
    from retrieval.engine import QueryRequest

    result = engine.query(QueryRequest(anchor, (), k=TOP * 4, change=change))
    return _files_once([video_id(h.path) for h in result.hits])[:TOP]


def _files_once(ids: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(ids))
