"""Scores come from the catalog's vectors: a FAISS file whose vectors differ only changes recall."""

import shutil

import numpy as np

from retrieval.api import Engine, QueryRequest
from retrieval.pipeline.settings import IndexSettings
from retrieval.search.ranking import StoredVectors, score
from retrieval.store.catalog import Catalog
from retrieval.store.vectors.faiss_index import VectorIndex, index_path


def test_scores_ignore_vectors_a_faiss_file_holds(tmp_path, example_videos):
    videos = tmp_path / "videos"
    videos.mkdir()
    for name in ("cup.mp4", "campus_01.mp4", "campus_02.mp4"):
        shutil.copy(example_videos / name, videos / name)
    engine = Engine(videos / ".convis")
    engine.index(videos, ["efficientnet-lite0"], IndexSettings(workers=1))
    clean = engine.query(QueryRequest(videos / "cup.mp4", ["location"]))
    with Catalog(videos / ".convis" / "catalog.duckdb", read_only=True) as catalog:
        (row,) = catalog.indexers()
        ids, matrix = catalog.vectors(row.indexer)
        generation = catalog.generation
    # a well-formed index (right count, generation and checksum) holding other vectors
    scrambled = (matrix * 1e18).astype(np.float32)
    VectorIndex.build(ids, scrambled, generation).save(index_path(videos / ".convis", row.indexer))
    again = Engine(videos / ".convis").query(QueryRequest(videos / "cup.mp4", ["location"]))
    assert sorted((h.path, round(h.total, 6)) for h in again.hits) == \
        sorted((h.path, round(h.total, 6)) for h in clean.hits)


def test_a_candidate_without_a_stored_vector_gets_no_score():
    vectors = {"m": StoredVectors({1: np.array([1.0, 0.0], np.float32)})}
    scored = score([1, 2], {"m": np.array([1.0, 0.0], np.float32)}, vectors, {"location": "m"})
    assert scored == {1: {"location": 1.0}}
