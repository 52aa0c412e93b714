"""A file removed from the index stays out of it: runs skip it (counted, not failed), saved FAISS indices never
recall it, and undoing the removal puts its stored vectors back, searchable at once with no model."""


import signal
import subprocess
import sys

import faiss
import pytest

from retrieval.api import Engine, NotIndexedError, QueryRequest
from retrieval.model_cache import ModelCache
from retrieval.pipeline.settings import IndexSettings
from retrieval.store.vectors.faiss_index import VectorIndex, index_path
from tests.indexes import copied_index
from tests.paths import ROOT


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


def _no_models(monkeypatch) -> None:
    def refused(*_args, **_kwargs):
        raise AssertionError("a model was asked for")

    for name in ("indexer", "text_tower", "text_towers"):
        monkeypatch.setattr(ModelCache, name, refused)


def _hit_paths(engine: Engine, anchor) -> set[str]:
    return {hit.path for hit in engine.query(QueryRequest(anchor, ["location"], k=10)).hits}


def test_undoing_a_removal_restores_the_stored_vectors_at_once_without_a_model(videos, monkeypatch):
    engine = Engine(videos / ".convis")
    with engine.open_catalog() as catalog:
        (indexer,) = [row.indexer for row in catalog.indexers()]
        stored, units = catalog.unit_vectors("cup.mp4", indexer).tobytes(), catalog.unit_ids("cup.mp4")
        drawn_from = catalog.backgrounds()[indexer].units
    _no_models(monkeypatch)
    engine.remove(["cup.mp4"])
    with engine.open_catalog() as catalog:  # the background is drawn from the units left, then from all again
        assert catalog.backgrounds()[indexer].units == drawn_from - len(units)
    assert "cup.mp4" not in _hit_paths(engine, videos / "campus_01.mp4")
    undone = engine.unremove([videos / "cup.mp4"])
    assert (undone.restored, undone.to_index) == (["cup.mp4"], [])
    assert "cup.mp4" in _paths(engine) and "cup.mp4" in _hit_paths(engine, videos / "campus_01.mp4")
    with engine.open_catalog() as catalog:
        assert catalog.unit_vectors("cup.mp4", indexer).tobytes() == stored
        assert catalog.unit_ids("cup.mp4") == units and catalog.excluded() == []
        assert catalog.backgrounds()[indexer].units == drawn_from
    saved = VectorIndex.load(index_path(videos / ".convis", indexer))
    assert saved is not None and set(units) <= set(faiss.vector_to_array(saved.index.id_map))
    monkeypatch.undo()
    report = _run(engine, videos)
    assert (report.excluded, report.indexed, report.unchanged) == (0, 0, 3)  # nothing left to embed


def test_a_run_while_removed_keeps_the_stored_vectors_for_the_undo(videos, monkeypatch):
    engine = Engine(videos / ".convis")
    engine.remove(["cup.mp4"])
    assert _run(engine, videos).excluded == 1  # it stays removed: the run skips it
    assert [f.path for f in engine.removed()] == ["cup.mp4"] and engine.removed()[0].kept
    _no_models(monkeypatch)
    assert engine.unremove(["cup.mp4"]).restored == ["cup.mp4"]
    assert "cup.mp4" in _hit_paths(engine, videos / "campus_01.mp4")


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


KILLED = """
import os, signal, sys
from pathlib import Path
import retrieval.engine
from retrieval.store import publish
from retrieval.store.catalog.removed import RemovedRows

def killed(*_args, **_kwargs):
    os.kill(os.getpid(), signal.SIGKILL)

index_dir, verb, when = sys.argv[1:]
if when == "committed":  # the catalog committed, the FAISS indices and snapshot not yet written
    faiss = [derived.name for derived in publish.DERIVED].index("faiss")
    publish.DERIVED.insert(faiss, publish.Derived("killed", killed))
else:  # half-way through the transaction: rows copied, not yet deleted where they came from
    RemovedRows._delete_rows = killed
getattr(retrieval.engine.Engine(Path(index_dir)), verb)(["cup.mp4"])
"""


@pytest.mark.parametrize("verb, when, removed", [("remove", "in_transaction", False), ("remove", "committed", True),
                                                 ("unremove", "in_transaction", True),
                                                 ("unremove", "committed", False)])
def test_a_killed_remove_or_undo_leaves_the_index_whole(videos, verb, when, removed):
    engine = Engine(videos / ".convis")
    with engine.open_catalog() as catalog:
        (indexer,) = [row.indexer for row in catalog.indexers()]
        stored = catalog.unit_vectors("cup.mp4", indexer).tobytes()
    if verb == "unremove":
        engine.remove(["cup.mp4"])
    run = subprocess.run([sys.executable, "-c", KILLED, str(videos / ".convis"), verb, when], cwd=ROOT)
    assert run.returncode == -signal.SIGKILL
    # one state or the other, whole: listed and found, or listed as removed with its vectors kept
    assert ("cup.mp4" in _paths(engine)) is not removed
    assert ("cup.mp4" in _hit_paths(engine, videos / "campus_01.mp4")) is not removed
    assert [(f.path, f.kept) for f in engine.removed()] == ([("cup.mp4", True)] if removed else [])
    if removed:
        engine.unremove(["cup.mp4"])
    with engine.open_catalog() as catalog:
        assert catalog.unit_vectors("cup.mp4", indexer).tobytes() == stored
    assert "cup.mp4" in _hit_paths(engine, videos / "campus_01.mp4")
