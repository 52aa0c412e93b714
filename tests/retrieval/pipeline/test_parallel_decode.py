"""One long file decoded by several workers: cut into windows at unit boundaries, each decoded from the keyframe
before it, the same frames pixel for pixel as one worker decoding the whole file."""

import shutil

import numpy as np
import pytest

from bench.perf.footage import write_test_video
from retrieval.core.defaults import WINDOW_FRAMES, WINDOWS_PER_WORKER
from retrieval.core.sampling import FrameSpec, as_spec
from retrieval.media import video_decoder
from retrieval.media.frames import Span, VideoInfo, spans
from retrieval.media.scan import FoundFile
from retrieval.pipeline import stages
from retrieval.pipeline.stages import DecodeJob, decode_job, unit_windows
from tests.retrieval.pipeline.test_windows import Recording, index, units_and_vectors

SPECS = (as_spec(4), FrameSpec("linspace", 3))


@pytest.fixture(scope="module")
def long_clip(tmp_path_factory):
    """30 s at 25 fps with a keyframe every 250 frames (x264's default), as camera footage has."""
    folder = tmp_path_factory.mktemp("long")
    return write_test_video(folder / "long.mp4", 160, 96, 30.0)


def found(path):
    stat = path.stat()
    return FoundFile(str(path), path.name, stat.st_size, stat.st_mtime)


@pytest.mark.parametrize("decoder", ["decord", "pyav"])
def test_windows_decoded_apart_are_the_whole_files_frames_pixel_for_pixel(long_clip, monkeypatch, decoder):
    pytest.importorskip({"pyav": "av"}.get(decoder, decoder))
    monkeypatch.setattr(video_decoder, "default_backends", lambda device=None: (decoder,))
    monkeypatch.setattr(stages, "PARALLEL_SECONDS", 10.0)
    whole = decode_job(DecodeJob(found(long_clip), SPECS, 2.0))
    first = decode_job(DecodeJob(found(long_clip), SPECS, 2.0, window=0, parts=2))
    assert first.windows > 2 * WINDOWS_PER_WORKER - 1 and len(first.spans) == 1
    parts = [first] + [decode_job(DecodeJob(found(long_clip), SPECS, 2.0, window=k, parts=2))
                       for k in range(1, first.windows)]
    assert [s for p in parts for s in p.spans] == whole.spans == spans(30.0, 2.0)
    for spec in SPECS:
        apart = [f for p in parts for f in p.frames[spec]]
        assert len(apart) == len(whole.frames[spec]) == 15
        for got, expected in zip(apart, whole.frames[spec], strict=False):
            assert got.indices == expected.indices
            assert np.array_equal(got.pixels, expected.pixels)
            np.testing.assert_array_equal(got.timestamps, expected.timestamps)


def test_a_long_file_is_cut_into_a_first_unit_and_even_windows_for_each_worker():
    info = VideoInfo(25 * 600, 25.0, 600.0, 1280, 720, "pyav")
    units = spans(600.0, 10.0)
    one = unit_windows(info, units, (as_spec(8),))
    assert one == [(0, 16), (16, 32), (32, 48), (48, 60)]  # one worker: only the memory bound cuts it
    shared = unit_windows(info, units, (as_spec(8),), parts=2)
    assert shared[0] == (0, 1) and shared[-1][1] == 60
    assert all(a == b for (_, a), (b, _) in zip(shared, shared[1:], strict=False))  # consecutive, nothing left out
    rest = [stop - first for first, stop in shared[1:]]
    assert len(rest) >= 2 * WINDOWS_PER_WORKER and max(rest) - min(rest) <= 1
    assert all(8 * n <= WINDOW_FRAMES for n in rest)
    short = VideoInfo(25 * 60, 25.0, 60.0, 1280, 720, "pyav")
    assert unit_windows(short, spans(60.0, 10.0), (as_spec(8),), parts=2) == [(0, 6)]  # short: one window
    assert unit_windows(info, [Span(0, 0.0, 600.0)], (as_spec(8),), parts=2) == [(0, 1)]


def test_the_local_executor_shares_a_long_file_among_its_workers_into_the_same_units(
        tmp_path, tiny_models, long_clip, monkeypatch):
    folder = tmp_path / "videos"
    folder.mkdir()
    shutil.copy(long_clip, folder / long_clip.name)
    whole, _ = index(tmp_path, "whole", tiny_models, folder, Recording(), segment_seconds=2.0)
    monkeypatch.setattr(stages, "PARALLEL_SECONDS", 10.0)

    class TwoWorkers(Recording):
        workers = 2

    shared = TwoWorkers()
    parts, report = index(tmp_path, "parts", tiny_models, folder, shared, segment_seconds=2.0)
    assert report.failed == [] and report.units == 15
    assert len(shared.tasks) > 2 * WINDOWS_PER_WORKER and shared.tasks[0][1:] == (0, 8)  # first: one unit
    (rows_whole, vec_whole), (rows_parts, vec_parts) = units_and_vectors(whole), units_and_vectors(parts)
    assert rows_parts == rows_whole
    np.testing.assert_allclose(vec_parts[long_clip.name], vec_whole[long_clip.name], rtol=1e-5, atol=1e-6)
