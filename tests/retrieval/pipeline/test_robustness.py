"""Bad input never crashes a run and never loses data."""

import os
import pickle
import shutil
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from indexers import create_indexer
from indexers.errors import ModelUnavailableError
from retrieval.api import Engine, QueryRequest
from retrieval.media.video_decoder import VideoDecoder
from retrieval.pipeline.distribute import ProcessDistributor, SerialDistributor, TaskFailed
from retrieval.pipeline.settings import IndexSettings
from tests import media
from tests.workers import Costly, behave, decode_bytes, sleep_for, stamped, worker_pid

ROOT_USER = os.geteuid() == 0


def _real(example_videos, name="cup.mp4"):
    return (example_videos / name).read_bytes()


def build_bad_folder(folder, example_videos):
    """Every kind of awkward input, with the outcome a run must give it: ok, failed or either."""
    real = _real(example_videos)
    cases = {}

    def case(name, outcome, make):
        make(folder / name)
        cases[name] = outcome

    case("empty.mp4", "failed", lambda p: p.write_bytes(b""))
    case("truncated.mp4", "either", lambda p: p.write_bytes(real[: len(real) // 3]))
    case("garbage.mp4", "failed", lambda p: p.write_bytes(np.random.default_rng(1).bytes(40_000)))
    case("text named.mp4", "failed", lambda p: p.write_text("not a video\n" * 100))
    case("audio_only.mp4", "failed", media.make_audio_only)
    case("no_frames.mp4", "failed", media.make_empty_video)
    case("single_frame.mp4", "ok", lambda p: media.make_clip(p, frames=1, fps=10))
    case("vfr.mp4", "ok", lambda p: media.make_vfr_clip(p, [0, 0.1, 0.15, 0.9, 1.0, 2.5, 2.6, 4.0]))
    case("big_4k.mp4", "ok", lambda p: media.make_clip(p, frames=4, fps=2, size=(3840, 2160), codec="mpeg4"))
    case("rotated.mp4", "ok", lambda p: shutil.copy(media.ROTATED, p))
    case("ünïcödé and spaces 视频.mp4", "ok", lambda p: p.write_bytes(real))
    (folder / "sub").mkdir()
    case("sub/inside_link.mp4", "ok", lambda p: p.symlink_to(folder / "single_frame.mp4"))
    case("sub/outside_link.mp4", "failed", lambda p: p.symlink_to(example_videos / "box.mp4"))
    case("loop_a.mp4", "failed", lambda p: (p.symlink_to(folder / "loop_b.mp4"),
                                            (folder / "loop_b.mp4").symlink_to(p)))
    cases["loop_b.mp4"] = "failed"
    (folder / "sub" / "dir_loop").symlink_to(folder, target_is_directory=True)  # never followed
    if not ROOT_USER:  # root reads any file, so permissions can't make one unreadable here
        case("unreadable.mp4", "failed", lambda p: (p.write_bytes(real), p.chmod(0)))
    return cases


def test_every_bad_input_is_skipped_with_a_reason_and_good_ones_are_indexed(tmp_path, example_videos, tiny_models):
    folder = tmp_path / "bad"
    folder.mkdir()
    cases = build_bad_folder(folder, example_videos)
    engine = Engine(tmp_path / "index")
    report = engine.index(folder, [f"dinov2:{tiny_models['dinov2']}"], IndexSettings(workers=1, timeout=60))
    failed = dict(report.failed)
    info = engine.info()
    for name, outcome in cases.items():
        if outcome == "failed":
            assert failed.get(name), f"{name} should fail with a reason"
        elif outcome == "ok":
            assert name not in failed, f"{name}: {failed.get(name)}"
    assert report.indexed == sum(o == "ok" for o in cases.values()) + ("truncated.mp4" not in failed)
    assert "outside" in failed["sub/outside_link.mp4"]
    assert "no video stream" in failed["audio_only.mp4"]
    assert not any("dir_loop" in path for path in failed)  # directory links are not walked
    assert info["files_ok"] == report.indexed


def test_frames_of_a_4k_clip_are_decoded_small(tmp_path):
    clip = media.make_clip(tmp_path / "4k.mp4", frames=4, fps=2, size=(3840, 2160), codec="mpeg4")
    _, units = VideoDecoder().sample(clip, 4)
    assert units[0][1].pixels.shape == (4, 256, 456, 3)  # 8.3 MP frames never reach the model


@pytest.mark.parametrize("backend", ["decord", "pyav"])
def test_rotated_video_is_decoded_upright(backend):
    info, units = VideoDecoder(backends=[backend]).sample(media.ROTATED, 2)
    pixels = units[0][1].pixels[0]
    assert (info.width, info.height) == (32, 64) and pixels.shape == (64, 32, 3)
    assert pixels[0].mean() < 20 and pixels[-1].mean() > 235  # the white left half now lies at the bottom


def test_a_file_that_vanishes_mid_run_is_reported_not_stored(tmp_path, video_folder, tiny_models):
    doomed = video_folder / "cup.mp4"

    class Vanishing(SerialDistributor):
        def map(self, fn, items):
            for item in items:
                if item.file.rel == "cup.mp4":
                    doomed.unlink()
                yield item, (fn(item) if os.path.exists(item.file.path) else FileNotFoundError(item.file.path))

    engine = Engine(tmp_path / "index")
    report = engine.index(video_folder, [f"dinov2:{tiny_models['dinov2']}"], distributor=Vanishing())
    assert ("cup.mp4", "vanished during the run") in report.failed
    assert report.indexed == 3 and engine.info()["files_failed"] == 0


def test_process_distributor_survives_hangs_and_crashes():
    items = [("ok", 1), ("hang", 60), ("ok", 2), ("crash", 0), ("raise", "bad"), ("ok", 3)]
    results = dict(ProcessDistributor(workers=1, timeout=3).map(behave, items))
    assert [results[("ok", i)] for i in (1, 2, 3)] == [1, 2, 3]
    assert isinstance(results[("hang", 60)], TaskFailed) and "timed out" in str(results[("hang", 60)])
    assert isinstance(results[("crash", 0)], TaskFailed) and "crashed" in str(results[("crash", 0)])
    assert isinstance(results[("raise", "bad")], ValueError)


def test_crash_with_several_workers_blames_only_the_culprit():
    items = [("ok", i) for i in range(6)] + [("crash", 0)] + [("ok", i) for i in range(6, 10)]
    results = dict(ProcessDistributor(workers=2, timeout=30).map(behave, items))
    assert [results[("ok", i)] for i in range(10)] == list(range(10))
    assert isinstance(results[("crash", 0)], TaskFailed)


def _appears(path, within: float = 60.0) -> bool:
    """Whether ``path`` exists, waiting for it up to ``within`` seconds (a deadline, not a measured margin)."""
    deadline = time.monotonic() + within
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    return path.exists()


def test_workers_start_the_next_task_while_the_caller_is_busy(tmp_path):
    """Decoding overlaps embedding: the next file is decoded while the caller handles this one. The order of
    events is what counts: each next task starts before the caller is done with the one before it."""
    items = [(str(tmp_path), f"task{i}", 0.0) for i in range(3)]
    started_while_busy = []
    for _, name in ProcessDistributor(workers=1, timeout=60).map(stamped, items):
        following = tmp_path / f"task{int(name[-1]) + 1}"
        if name != "task2":  # the caller's own work on this result lasts until the next task has started
            started_while_busy.append(_appears(following))
    assert started_while_busy == [True, True]


def test_tasks_that_settle_together_still_leave_the_next_one_running(tmp_path, monkeypatch):
    """Two tasks finish before the pool is asked: the next task is handed out before either result is."""
    import concurrent.futures

    from retrieval.pipeline import distribute

    def wait_for_all(fs, timeout=None, return_when=None):  # the caller came back late: both are done
        return concurrent.futures.wait(fs, timeout=60, return_when=concurrent.futures.ALL_COMPLETED)

    monkeypatch.setattr(distribute, "wait", wait_for_all)
    items = [(str(tmp_path), f"task{i}", 0.0) for i in range(3)]
    started_while_busy = []
    for _, name in ProcessDistributor(workers=1, timeout=60).map(stamped, items):
        if name == "task1":  # settled together with task0: task2 must already be running
            started_while_busy.append(_appears(tmp_path / "task2", within=10.0))
    assert started_while_busy == [True]


def test_without_prefetch_the_worker_waits_for_the_caller(tmp_path):
    items = [(str(tmp_path), f"task{i}", 0.0) for i in range(2)]
    absent_while_busy = []
    for _, name in ProcessDistributor(workers=1, timeout=60, prefetch=0).map(stamped, items):
        if name == "task0":
            time.sleep(0.5)  # time the worker would need to start task1, were it allowed to
            absent_while_busy.append(not (tmp_path / "task1").exists())
    assert absent_while_busy == [True]


def test_queued_tasks_time_limits_start_when_a_worker_takes_them():
    """Three ~1.5 s tasks behind one worker, 2.5 s limit: waiting in the queue is not running late."""
    items = [("hang", 1.4), ("hang", 1.5), ("hang", 1.6), ("hang", 60)]
    pool = ProcessDistributor(workers=1, timeout=2.5, prefetch=2)
    # the worker started and idle first: a busy machine's process start is not what the margin measures
    assert dict(pool.map(behave, [("ok", 0)])) == {("ok", 0): 0}
    results = dict(pool.map(behave, items))
    assert [results[i] for i in items[:3]] == [1.4, 1.5, 1.6]
    assert isinstance(results[("hang", 60)], TaskFailed)


def test_a_crash_blames_the_running_task_not_the_queued_ones():
    items = [("ok", 1), ("crash", 0), ("ok", 2), ("ok", 3)]
    results = dict(ProcessDistributor(workers=1, timeout=30, prefetch=2).map(behave, items))
    assert [results[("ok", i)] for i in (1, 2, 3)] == [1, 2, 3]
    assert isinstance(results[("crash", 0)], TaskFailed) and "crashed" in str(results[("crash", 0)])


@pytest.fixture(scope="module")
def fuzz_pool():
    return ProcessDistributor(workers=1, timeout=30)


@settings(max_examples=25, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data())
def test_mutated_real_clips_decode_or_fail_cleanly(data, fuzz_pool, example_videos):
    """Flip, cut and splice bytes of a real clip: each decode returns frames or a reason, in a worker."""
    real = bytearray(_real(example_videos, "carphone_pristine.mp4"))
    for _ in range(data.draw(st.integers(1, 20))):
        where = data.draw(st.integers(0, len(real) - 1))
        real[where] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(len(real) // 10, len(real)))
    blob = bytes(real[:cut])
    ((_, result),) = list(fuzz_pool.map(decode_bytes, [blob]))
    if isinstance(result, TaskFailed):
        pytest.fail(f"decoder did not return: {result}")
    assert isinstance(result, (list, str)) and not isinstance(result, Exception)
    if isinstance(result, list):
        assert all(shape[0] == 4 and shape[-1] == 3 for shape in result)
    else:
        assert result.startswith("error: ")


def test_pickled_weights_are_never_executed(tmp_path):
    marker = tmp_path / "pwned"

    class Payload:
        def __reduce__(self):
            return (os.system, (f"touch {marker}",))

    weights = tmp_path / "evil.pth"
    weights.write_bytes(pickle.dumps({"weight": Payload()}))
    with pytest.raises(ModelUnavailableError):
        create_indexer(f"efficientnet-lite0:{weights}")
    assert not marker.exists()


def test_query_on_an_index_with_no_vectors_yet_returns_nothing(tmp_path, example_videos):
    folder = tmp_path / "only-broken"
    folder.mkdir()
    (folder / "broken.mp4").write_bytes(b"\x00" * 1000)
    engine = Engine(tmp_path / "index")
    engine.index(folder, ["efficientnet-lite0"], distributor=SerialDistributor())
    result = Engine(tmp_path / "index").query(QueryRequest(example_videos / "cup.mp4", ["location"], k=3))
    assert result.hits == []


@pytest.mark.parametrize("keep_warm", [False, True])
def test_a_warm_pool_serves_the_next_map_with_the_same_workers(keep_warm):
    """A long file's windows are mapped after its first window: a kept pool spares starting workers again."""
    pool = ProcessDistributor(workers=1, timeout=60, keep_warm=keep_warm)
    try:
        first = {pid for _, pid in pool.map(worker_pid, [0, 1])}
        second = {pid for _, pid in pool.map(worker_pid, [2, 3])}
    finally:
        pool.close()
    assert len(first) == len(second) == 1
    assert (first == second) is keep_warm
    assert pool._started is None  # closed: nothing left running


def test_a_task_that_says_it_costs_more_gets_that_many_time_limits():
    plain, costly = Costly(2.0), Costly(2.0, timeout_factor=10.0)
    results = dict(ProcessDistributor(workers=2, timeout=0.8).map(sleep_for, [plain, costly]))
    assert isinstance(results[plain], TaskFailed) and "timed out after 1 s" in str(results[plain])
    assert results[costly] == 2.0
