"""Failures that may pass are tried again by the next run; a file written while it is decoded is decoded again."""

import shutil

import numpy as np
import pytest

from retrieval.api import Engine
from retrieval.media.scan import content_hash
from retrieval.pipeline import stages
from retrieval.pipeline.distribute import SerialDistributor, TaskFailed
from retrieval.pipeline.settings import IndexSettings
from retrieval.store.catalog import Catalog


class FailingOnce(SerialDistributor):
    """Decodes in process, except that ``name`` fails with ``error`` (what a worker pool reports)."""

    def __init__(self, name: str, error: BaseException):
        self.name, self.error = name, error

    def map(self, fn, items):
        for item, result in super().map(fn, items):
            yield item, (self.error if item.file.rel == self.name else result)


def run(engine, folder, distributor=None, spec=None, **kw):
    return engine.index(folder, [spec or engine.spec], IndexSettings(**kw),
                        distributor=distributor or SerialDistributor())


def states(engine):
    with Catalog(engine.catalog_path) as catalog:
        return catalog.file_states()


@pytest.mark.parametrize("error", [TaskFailed("timed out after 300 s"),
                                   TaskFailed("decoder crashed: its worker process died (killed or out of memory)"),
                                   OSError(28, "No space left on device")])
def test_a_file_that_failed_for_a_passing_reason_is_indexed_by_the_next_run(engine, video_folder, error):
    first = run(engine, video_folder, FailingOnce("cup.mp4", error))
    assert [path for path, _ in first.failed] == ["cup.mp4"]
    assert states(engine)["cup.mp4"].transient

    again = run(engine, video_folder)
    assert (again.indexed, again.unchanged, again.failed, again.failed_earlier) == (1, 3, [], 0)
    assert states(engine)["cup.mp4"].status == "ok"
    assert any("tried again" in note for note in again.notes)


def test_a_failed_commit_is_tried_again_by_the_next_run(engine, video_folder, monkeypatch):
    real = Catalog.commit_file

    def disk_full(self, record, units, vectors):
        if record.path == "cup.mp4":
            raise OSError(28, "No space left on device")
        return real(self, record, units, vectors)

    monkeypatch.setattr(Catalog, "commit_file", disk_full)
    first = run(engine, video_folder)
    assert dict(first.failed)["cup.mp4"].endswith("No space left on device")
    monkeypatch.setattr(Catalog, "commit_file", real)
    assert run(engine, video_folder).indexed == 1


def test_a_file_that_is_not_a_video_is_not_retried_unless_asked(engine, video_folder):
    (video_folder / "notes.mp4").write_text("not a video\n" * 50)
    first = run(engine, video_folder)
    assert not states(engine)["notes.mp4"].transient

    again = run(engine, video_folder)
    assert (again.indexed, again.failed_earlier) == (0, 1)

    asked = run(engine, video_folder, retry_failed=True)
    assert (asked.indexed, asked.failed_earlier) == (0, 0)
    assert dict(asked.failed) == dict(first.failed)  # decoded again, failed for the same reason


def test_a_file_replaced_while_it_is_decoded_is_stored_with_the_bytes_it_was_decoded_from(
        engine, video_folder, example_videos, tmp_path, monkeypatch):
    target, other = video_folder / "cup.mp4", example_videos / "bikes.mp4"
    real = stages.VideoDecoder.sample
    replaced = []

    def sample_then_replace(self, path, spec, *rest, **named):
        result = real(self, path, spec, *rest, **named)
        if path.endswith("cup.mp4") and not replaced:
            shutil.copyfile(other, target)  # written in place, after the old bytes were decoded
            replaced.append(path)
        return result

    monkeypatch.setattr(stages.VideoDecoder, "sample", sample_then_replace)
    report = run(engine, video_folder)
    assert replaced and report.failed == []

    alone = tmp_path / "alone"
    alone.mkdir()
    shutil.copy(other, alone / "bikes.mp4")
    reference = Engine(tmp_path / "reference")
    assert run(reference, alone, spec=engine.spec).indexed == 1
    with Catalog(engine.catalog_path, read_only=True) as catalog:
        stored_hash = catalog.file_states()["cup.mp4"].content_hash
        stored = catalog.unit_vectors("cup.mp4", engine.spec)
    with Catalog(reference.catalog_path, read_only=True) as catalog:
        expected = catalog.unit_vectors("bikes.mp4", engine.spec)
    assert stored.size and stored.shape == expected.shape
    assert stored_hash == content_hash(target) == content_hash(other)
    np.testing.assert_allclose(stored, expected, atol=1e-5)


def test_a_file_that_keeps_changing_while_decoded_is_left_for_a_later_run(engine, video_folder, monkeypatch):
    real = stages.VideoDecoder.sample
    target = video_folder / "cup.mp4"

    def sample_then_append(self, path, spec, *rest, **named):
        result = real(self, path, spec, *rest, **named)
        if path.endswith("cup.mp4"):
            with open(target, "ab") as fh:  # a file still being written
                fh.write(b"\0" * 16)
        return result

    monkeypatch.setattr(stages.VideoDecoder, "sample", sample_then_append)
    report = run(engine, video_folder)
    assert "changed while it was decoded" in dict(report.failed)["cup.mp4"]
    assert states(engine)["cup.mp4"].transient
