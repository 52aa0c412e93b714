"""A file removed from the index stays out of it: runs skip it (counted, not failed), saved FAISS indices never
recall it, and undoing the removal lets the next run index it again."""


import pytest

from retrieval.engine import Engine, NotIndexedError, QueryRequest
from retrieval.pipeline.settings import IndexSettings
from retrieval.store.vectors import VectorIndex, index_path
from tests.indexes import copied_index


@pytest.fixture
def videos(three_clips_indexed, tmp_path):
    return copied_index(three_clips_indexed, tmp_path / "videos")


def _run(engine: Engine, videos):
    return engine.index(videos, settings=IndexSettings(workers=1))


def _paths(engine: Engine) -> set[str]:
    return {f.path for f in engine.files()}


def test_a_run_skips_removed_files_and_counts_them(videos):
    engine = Engine(videos / ".convis")
    assert engine.remove([videos / "cup.mp4"]) == ["cup.mp4"]  # absolute inside the root, or relative
    report = _run(engine, videos)
    assert (report.excluded, report.indexed, report.unchanged, report.failed) == (1, 0, 2, [])
    assert report.as_dict()["excluded"] == 1
    assert _paths(engine) == {"campus_01.mp4", "campus_02.mp4"}
    assert (videos / "cup.mp4").is_file()


def test_undoing_a_removal_indexes_the_file_again(videos):
    engine = Engine(videos / ".convis")
    engine.remove(["cup.mp4"])
    assert engine.unremove(["cup.mp4"]) == ["cup.mp4"]
    report = _run(engine, videos)
    assert (report.excluded, report.indexed) == (0, 1)
    assert "cup.mp4" in _paths(engine)


def test_saved_faiss_indices_do_not_recall_removed_units(videos):
    engine = Engine(videos / ".convis")
    engine.remove(["cup.mp4"])
    with engine.open_catalog() as catalog:
        generation = catalog.generation
        (indexer,) = [row.indexer for row in catalog.indexers()]
        kept = catalog.vector_count(indexer)
    saved = VectorIndex.load(index_path(videos / ".convis", indexer))
    assert saved is not None and saved.generation == generation and saved.size == kept
    hits = engine.query(QueryRequest(videos / "campus_01.mp4", ["location"], k=10)).hits
    assert hits and "cup.mp4" not in {hit.path for hit in hits}


def test_unknown_paths_change_nothing_and_are_named(videos):
    engine = Engine(videos / ".convis")
    with pytest.raises(NotIndexedError, match="nope.mp4"):
        engine.remove(["cup.mp4", "nope.mp4"])
    assert "cup.mp4" in _paths(engine)
    with pytest.raises(NotIndexedError, match="not removed"):
        engine.unremove(["cup.mp4"])
    with pytest.raises(NotIndexedError, match="not inside"):
        engine.remove([videos.parent / "elsewhere.mp4"])
