import os
import shutil

import faiss
import numpy as np
import pytest

from retrieval.api import Engine, QueryRequest
from retrieval.media.frames import DecodeError
from retrieval.pipeline import run as pipeline_run
from retrieval.pipeline.distribute import SerialDistributor
from retrieval.pipeline.settings import IndexSettings
from retrieval.store.catalog import Catalog
from retrieval.store.errors import IndexSettingsError
from retrieval.store.vectors.faiss_index import VectorIndex, index_path


def run(engine, folder, **kw):
    return engine.index(folder, [engine.spec], IndexSettings(**kw), distributor=SerialDistributor())


def unit_ids(engine):
    with Catalog(engine.catalog_path, read_only=True) as cat:
        return dict(cat.db.execute("SELECT f.path, list(u.unit_id ORDER BY u.segment) FROM files f "
                                   "JOIN units u USING (file_id) GROUP BY f.path").fetchall())


def test_index_then_reindex_skips_unchanged_reembeds_changed_forgets_deleted(engine, video_folder):
    first = run(engine, video_folder)
    assert (first.found, first.indexed, first.failed) == (4, 4, [])
    before = unit_ids(engine)

    second = run(engine, video_folder)
    assert (second.indexed, second.unchanged) == (0, 4)
    assert unit_ids(engine) == before  # nothing re-embedded

    shutil.copy(video_folder / "cup.mp4", video_folder / "campus_02.mp4")  # new bytes under an old name
    os.remove(video_folder / "carphone_pristine.mp4")
    third = run(engine, video_folder)
    assert (third.indexed, third.unchanged, third.forgotten) == (1, 2, 1)
    after = unit_ids(engine)
    assert "carphone_pristine.mp4" not in after
    assert after["campus_02.mp4"] != before["campus_02.mp4"]
    assert after["campus_01.mp4"] == before["campus_01.mp4"]


def test_touched_file_with_same_bytes_keeps_its_vectors(engine, video_folder):
    run(engine, video_folder)
    before = unit_ids(engine)
    os.utime(video_folder / "cup.mp4", (1, 1))
    report = run(engine, video_folder)
    assert report.indexed == 0 and unit_ids(engine) == before


def test_broken_files_are_skipped_with_reasons_and_the_run_succeeds(engine, video_folder):
    (video_folder / "empty.mp4").write_bytes(b"")
    (video_folder / "notes.mp4").write_text("this is a text file\n" * 20)
    (video_folder / "garbage.mov").write_bytes(np.random.default_rng(0).bytes(50_000))
    report = run(engine, video_folder)
    assert report.indexed == 4
    failed = dict(report.failed)
    assert set(failed) == {"empty.mp4", "notes.mp4", "garbage.mov"}
    assert all(reason for reason in failed.values())
    info = engine.info()
    assert info["files_failed"] == 3 and {f["path"] for f in info["failures"]} == set(failed)
    again = run(engine, video_folder)  # unchanged broken files are not retried, and still reported as failed
    assert (again.indexed, again.unchanged, again.failed_earlier) == (0, 4, 3)
    assert dict(again.failed) == failed


def test_faiss_index_agrees_with_catalog(engine, video_folder):
    run(engine, video_folder)
    with Catalog(engine.catalog_path, read_only=True) as cat:
        (row,) = cat.indexers()
        ids, matrix = cat.vectors(row.indexer)
        generation = cat.generation
    saved = VectorIndex.load(index_path(engine.index_dir, row.indexer))
    assert saved.generation == generation and saved.size == len(ids) == 4
    np.testing.assert_allclose(saved.vectors(ids), matrix)


def _saved_index(engine) -> tuple[str, VectorIndex]:
    with Catalog(engine.catalog_path, read_only=True) as cat:
        (row,) = cat.indexers()
    return row.faiss_factory, VectorIndex.load(index_path(engine.index_dir, row.indexer))


def test_faiss_index_choice_is_recorded_overridable_and_kept(engine, video_folder):
    run(engine, video_folder)
    factory, saved = _saved_index(engine)
    assert factory == saved.factory == "Flat"  # four vectors: exact search
    run(engine, video_folder, faiss_index="HNSW16,Flat", faiss_params="efSearch=48")
    factory, saved = _saved_index(engine)
    assert factory == "HNSW16,Flat" and saved.search_params == "efSearch=48"
    inner = faiss.downcast_index(saved.index.index)
    assert isinstance(inner, faiss.IndexHNSWFlat) and inner.hnsw.efSearch == 48
    (video_folder / "cup.mp4").unlink()
    run(engine, video_folder)  # a later run without the options keeps them
    factory, saved = _saved_index(engine)
    assert factory == "HNSW16,Flat" and saved.size == 3
    approximate = engine.query(QueryRequest(video_folder / "campus_01.mp4", ["location"], k=2)).hits
    run(engine, video_folder, faiss_index="auto", faiss_params="auto")
    assert _saved_index(engine)[0] == "Flat"
    exact = engine.query(QueryRequest(video_folder / "campus_01.mp4", ["location"], k=2)).hits
    assert [h.path for h in approximate] == [h.path for h in exact] and len(exact) == 2
    assert [h.total for h in approximate] == pytest.approx([h.total for h in exact], abs=1e-5)


def test_an_index_too_small_to_train_uses_the_automatic_choice_until_it_can(engine, video_folder):
    run(engine, video_folder, faiss_index="IVF64,Flat", faiss_params="nprobe=8")
    factory, saved = _saved_index(engine)
    assert factory == "Flat" and saved.size == 4  # 4 vectors cannot train 64 lists
    with Catalog(engine.catalog_path, read_only=True) as cat:
        assert cat.setting("faiss_factory") == "IVF64,Flat"  # still wanted, once there are enough


def test_a_faiss_setting_that_cannot_work_is_refused_before_indexing(engine, video_folder):
    run(engine, video_folder, faiss_index="HNSW16,Flat")
    for bad in ({"faiss_index": "NoSuchIndex"}, {"faiss_index": "IVF8,PQ7"}, {"faiss_params": "efSearch=-"}):
        with pytest.raises(IndexSettingsError, match="FAISS index"):
            run(engine, video_folder, **bad)
    assert _saved_index(engine)[0] == "HNSW16,Flat"  # the previous setting stays


def test_segments_make_several_units(engine, video_folder):
    report = run(engine, video_folder, segment_seconds=10.0)
    ids = unit_ids(engine)
    assert len(ids["campus_01.mp4"]) == 2 and len(ids["carphone_pristine.mp4"]) == 1
    assert report.units == sum(len(v) for v in ids.values())


def test_a_new_segment_length_recuts_the_files_whose_units_change_and_is_kept(engine, video_folder):
    run(engine, video_folder)
    before = unit_ids(engine)
    report = run(engine, video_folder, segment_seconds=10.0)  # campus clips are 20 s, cup 8 s, carphone 4 s
    after = unit_ids(engine)
    assert (report.indexed, report.unchanged, report.units) == (2, 2, 4)
    assert len(after["campus_01.mp4"]) == len(after["campus_02.mp4"]) == 2
    assert after["cup.mp4"] == before["cup.mp4"] and after["carphone_pristine.mp4"] == before["carphone_pristine.mp4"]
    assert report.notes == ["2 indexed file(s) get 10 s units; each keeps its old units until its new ones are "
                            "committed"]
    again = run(engine, video_folder)  # no --segment: the index's own length
    assert (again.indexed, again.unchanged) == (0, 4) and unit_ids(engine) == after
    whole = run(engine, video_folder, segment_seconds=0)  # back to one unit per file
    assert whole.indexed == 2 and all(len(ids) == 1 for ids in unit_ids(engine).values())


class StopAfterFirst(SerialDistributor):
    """Decodes one file, then the run is stopped (as by Ctrl-C) once that file is committed."""

    def map(self, fn, items):
        for n, item in enumerate(items):
            if n == 1:
                raise KeyboardInterrupt
            yield item, fn(item)


def test_a_stopped_resegmenting_run_loses_nothing_and_the_next_run_finishes_it(engine, video_folder):
    run(engine, video_folder)
    before = unit_ids(engine)
    with pytest.raises(KeyboardInterrupt):
        engine.index(video_folder, [engine.spec], IndexSettings(segment_seconds=10.0), distributor=StopAfterFirst())
    stopped = unit_ids(engine)
    assert len(stopped["campus_01.mp4"]) == 2 and stopped["campus_02.mp4"] == before["campus_02.mp4"]
    assert engine.info()["files_ok"] == 4  # the file not yet re-cut keeps its unit and vector
    report = run(engine, video_folder)  # carries on without being asked again
    assert report.indexed == 1 and len(unit_ids(engine)["campus_02.mp4"]) == 2
    assert run(engine, video_folder).indexed == 0


class FailingOn(SerialDistributor):
    def __init__(self, name: str):
        self.name = name

    def map(self, fn, items):
        for item in items:
            yield item, (DecodeError("timed out") if item.file.rel == self.name else fn(item))


def test_a_file_that_fails_to_be_recut_keeps_its_units_and_is_retried(engine, video_folder):
    run(engine, video_folder)
    before = unit_ids(engine)
    report = engine.index(video_folder, [engine.spec], IndexSettings(segment_seconds=10.0),
                          distributor=FailingOn("campus_02.mp4"))
    assert report.failed == [("campus_02.mp4", "timed out")]
    assert unit_ids(engine)["campus_02.mp4"] == before["campus_02.mp4"] and engine.info()["files_failed"] == 0
    assert run(engine, video_folder).indexed == 1 and len(unit_ids(engine)["campus_02.mp4"]) == 2


def test_second_indexer_adds_vectors_without_touching_the_first(engine, video_folder, tiny_models):
    run(engine, video_folder)
    before = unit_ids(engine)
    report = engine.index(video_folder, [engine.spec, f"clip:{tiny_models['hf_clip']}"],
                          distributor=SerialDistributor())
    assert report.indexed == 4 and unit_ids(engine) == before
    assert len(engine.info()["indexers"]) == 2


def test_process_pool_indexes_like_serial(tmp_path, tiny_models, video_folder):
    spec = f"dinov2:{tiny_models['dinov2']}"
    pooled = Engine(tmp_path / "pooled")
    pooled.index(video_folder, [spec], IndexSettings(workers=2))
    serial = Engine(tmp_path / "serial")
    serial.index(video_folder, [spec], distributor=SerialDistributor())
    vecs = []
    for eng in (pooled, serial):
        with Catalog(eng.catalog_path, read_only=True) as cat:
            vecs.append({p: cat.unit_vectors(p, cat.indexers()[0].indexer) for p in cat.file_states()})
    assert vecs[0].keys() == vecs[1].keys()
    for path in vecs[0]:
        np.testing.assert_allclose(vecs[0][path], vecs[1][path], atol=1e-5)


def test_an_index_of_captions_alone_cuts_units_and_embeds_each_files_caption(tmp_path, example_videos):
    folder = tmp_path / "videos"
    folder.mkdir()
    for name in ("cup.mp4", "box.mp4"):
        shutil.copy(example_videos / name, folder / name)
    engine = Engine(tmp_path / "index")
    report = engine.index(folder, ["text"], IndexSettings(captions=example_videos.parent / "captions"),
                          distributor=SerialDistributor())
    assert (report.indexed, report.failed, report.captioned) == (2, [], 2)
    with Catalog(engine.catalog_path, read_only=True) as cat:
        (row,) = cat.indexers()
        durations = dict(cat.db.execute("SELECT path, duration FROM files").fetchall())
        assert cat.unit_vectors("cup.mp4", row.indexer).shape == (1, row.dim)
    assert all(d > 1 for d in durations.values())  # the videos were probed for their length


def flip_keeping_size_and_mtime(path, at: int = 4096, count: int = 64) -> None:
    """Overwrite ``count`` bytes of ``path`` in place and put its mtime back (as a tool that edits in place and
    restores times does)."""
    stat = path.stat()
    with open(path, "r+b") as fh:
        fh.seek(at)
        block = fh.read(count)
        fh.seek(at)
        fh.write(bytes(b ^ 0xFF for b in block))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert path.stat().st_size == stat.st_size and path.stat().st_mtime_ns == stat.st_mtime_ns


def test_bytes_rewritten_under_the_same_size_and_mtime_are_indexed_again(engine, video_folder):
    run(engine, video_folder)
    before = unit_ids(engine)
    flip_keeping_size_and_mtime(video_folder / "cup.mp4")
    report = run(engine, video_folder)
    assert (report.indexed, report.unchanged) == (1, 3), report
    after = unit_ids(engine)
    assert after["cup.mp4"] != before["cup.mp4"]  # its units written again from the new bytes
    assert {p: u for p, u in after.items() if p != "cup.mp4"} == {p: u for p, u in before.items() if p != "cup.mp4"}


def test_a_moved_stat_key_over_the_same_bytes_is_hashed_not_embedded(engine, video_folder, monkeypatch):
    run(engine, video_folder)
    before = unit_ids(engine)
    hashed = []
    real_hash = pipeline_run.content_hash
    monkeypatch.setattr(pipeline_run, "content_hash", lambda path: hashed.append(os.path.basename(path))
                        or real_hash(path))
    clip = video_folder / "cup.mp4"
    copy = video_folder / "cup.tmp"
    shutil.copy2(clip, copy)  # the same bytes and mtime under a new inode and change time
    os.replace(copy, clip)
    report = run(engine, video_folder)
    assert (report.indexed, report.unchanged) == (0, 4) and unit_ids(engine) == before
    assert hashed == ["cup.mp4"]  # the one file whose key moved was read, no other
    again = run(engine, video_folder)  # its new key was recorded: not hashed again
    assert (again.indexed, again.unchanged) == (0, 4) and hashed == ["cup.mp4"]
