"""A file is decoded a window of units at a time, so memory and each task's time limit stay bounded
however long the video is; decode workers are capped and start only when a run has work."""

import os

import numpy as np
import pytest
from typer.testing import CliRunner

from retrieval.api import Engine
from retrieval.cli.app import app
from retrieval.media.frames import DecodeError
from retrieval.pipeline import local, stages
from retrieval.pipeline.distribute import ProcessDistributor, SerialDistributor
from retrieval.pipeline.settings import MIN_SEGMENT_SECONDS, IndexSettings
from retrieval.store.catalog import Catalog
from retrieval.store.errors import IndexSettingsError


class Recording(SerialDistributor):
    """In-process decoding that records each task: (file, window, sampled frames it returned)."""

    def __init__(self, fail=lambda job: False, grown=lambda job: False):
        self.tasks, self.fail, self.grown = [], fail, grown

    def map(self, fn, items):
        for job, result in super().map(fn, items):
            if self.fail(job):
                result = DecodeError("unreadable packet")
            elif self.grown(job):
                result.windows += 1  # as if the file had been appended to since its first window
            frames = 0 if isinstance(result, BaseException) else \
                sum(len(f.indices) for fs in result.frames.values() for f in fs)
            self.tasks.append((job.file.rel, job.window, frames))
            yield job, result


def index(tmp_path, name, tiny_models, folder, distributor, **settings):
    engine = Engine(tmp_path / name)
    report = engine.index(folder, [f"dinov2:{tiny_models['dinov2']}"], IndexSettings(**settings),
                          distributor=distributor)
    return engine, report


def units_and_vectors(engine):
    with Catalog(engine.catalog_path, read_only=True) as cat:
        model = cat.indexers()[0].indexer
        rows = cat.db.execute("SELECT f.path, u.segment, u.start_s, u.end_s FROM files f JOIN units u "
                              "USING (file_id) ORDER BY f.path, u.segment").fetchall()
        vectors = {rel: cat.unit_vectors(rel, model) for rel, *_ in rows}
    return rows, vectors


@pytest.mark.slow
def test_a_long_file_is_decoded_a_window_at_a_time_into_the_same_units(tmp_path, tiny_models, video_folder,
                                                                        monkeypatch):
    whole, report = index(tmp_path, "whole", tiny_models, video_folder, Recording(), segment_seconds=1.0)
    assert report.failed == []
    monkeypatch.setattr(stages, "WINDOW_FRAMES", 16)
    windowed = Recording()
    parts, report = index(tmp_path, "windows", tiny_models, video_folder, windowed, segment_seconds=1.0)
    assert report.failed == [] and report.indexed == 4
    assert max(n for *_, n in windowed.tasks) <= 16  # no task holds more than a window's frames
    assert len(windowed.tasks) > 4  # the longer clips took several tasks
    (rows, vectors), (rows_whole, vectors_whole) = units_and_vectors(parts), units_and_vectors(whole)
    assert rows == rows_whole
    for rel, v in vectors.items():
        np.testing.assert_allclose(v, vectors_whole[rel], atol=1e-5)


def test_a_failed_window_fails_its_file_only(tmp_path, tiny_models, video_folder, monkeypatch):
    monkeypatch.setattr(stages, "WINDOW_FRAMES", 16)
    broken = Recording(fail=lambda job: job.file.rel == "campus_01.mp4" and job.window == 1)
    engine, report = index(tmp_path, "index", tiny_models, video_folder, broken, segment_seconds=1.0)
    assert [rel for rel, _ in report.failed] == ["campus_01.mp4"]
    assert "unreadable packet" in report.failed[0][1]
    assert report.indexed == 3
    rows, _ = units_and_vectors(engine)
    assert "campus_01.mp4" not in {rel for rel, *_ in rows}  # no part of it was committed


def test_a_file_whose_units_change_between_windows_fails_alone(tmp_path, tiny_models, video_folder, monkeypatch):
    monkeypatch.setattr(stages, "WINDOW_FRAMES", 16)
    growing = Recording(grown=lambda job: job.file.rel == "campus_01.mp4" and job.window == 1)
    _, report = index(tmp_path, "index", tiny_models, video_folder, growing, segment_seconds=1.0)
    assert report.failed == [("campus_01.mp4", "the video changed while it was indexed")]
    assert report.indexed == 3


def test_workers_are_capped_by_cores_and_by_memory_with_a_note(monkeypatch):
    count, note = local.worker_count(10000)
    assert 1 <= count <= local.os.cpu_count() and "10000" in note
    monkeypatch.setattr(local, "available_mb", lambda: local.WORKER_MEMORY_MB + 1)
    assert local.worker_count(2)[0] == 1
    assert local.worker_count(1) == (1, None)
    monkeypatch.setattr(local, "available_mb", lambda: None)  # not Linux: capped by cores alone
    assert local.worker_count(10000)[0] == local.os.cpu_count()


@pytest.fixture
def started(monkeypatch):
    """Decode workers as ``convis index`` makes them, decoding in this process; records each start."""
    starts = []
    monkeypatch.setattr(ProcessDistributor, "start", lambda self, preload=(): starts.append(self.workers))
    monkeypatch.setattr(ProcessDistributor, "map", lambda self, fn, items: SerialDistributor().map(fn, items))
    return starts


def test_decode_workers_start_only_when_the_run_has_work(tmp_path, tiny_models, video_folder, started):
    engine = Engine(tmp_path / "index")
    spec = [f"dinov2:{tiny_models['dinov2']}"]
    first = engine.index(video_folder, spec, IndexSettings(workers=10000))
    assert first.indexed == 4
    assert len(started) == 1 and started[0] <= local.os.cpu_count()  # capped
    assert any("not 10000" in note for note in first.notes)
    again = engine.index(video_folder, spec, IndexSettings(workers=10000))
    assert again.unchanged == 4 and len(started) == 1  # nothing to decode: no worker started


def test_units_shorter_than_the_minimum_are_refused_in_one_line(tmp_path, video_folder):
    with pytest.raises(IndexSettingsError, match="at least"):
        IndexSettings(segment_seconds=MIN_SEGMENT_SECONDS / 2)
    result = CliRunner().invoke(app, ["index", str(video_folder), "--index-dir", str(tmp_path / "index"),
                                      "--segment", "0.001s"])
    assert result.exit_code != 0
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "at least" in lines[0] and "Traceback" not in result.output
    assert not (tmp_path / "index").exists()


@pytest.mark.slow
def test_a_file_written_between_its_windows_is_left_for_a_later_run(tmp_path, tiny_models, video_folder,
                                                                     monkeypatch):
    """The hash comes with the first window: a later window read from other bytes must not join it."""
    monkeypatch.setattr(stages, "WINDOW_FRAMES", 16)
    target = video_folder / "campus_01.mp4"

    class WrittenAfterFirstWindow(Recording):
        def map(self, fn, items):
            for job, result in super().map(fn, items):
                if job.file.rel == target.name and job.window == 0:
                    with open(target, "r+b") as fh:  # same size, new bytes, mtime put back: the inode's ctime moves
                        stat = target.stat()
                        fh.seek(stat.st_size - 1)
                        fh.write(b"\x01")
                    os.utime(target, ns=(stat.st_atime_ns, stat.st_mtime_ns))
                yield job, result

    engine, report = index(tmp_path, "index", tiny_models, video_folder, WrittenAfterFirstWindow(),
                           segment_seconds=1.0)
    assert dict(report.failed)["campus_01.mp4"] == "the video changed while it was indexed"
    with Catalog(engine.catalog_path) as catalog:
        assert catalog.file_states()["campus_01.mp4"].transient  # the next run tries it again
