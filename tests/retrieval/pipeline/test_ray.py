"""Scaling out: indexing on Ray gives the local run's catalog and resumes from its shards."""

import pickle
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from retrieval.api import Engine
from retrieval.core.sampling import as_spec
from retrieval.core.segmentation import ShotRule
from retrieval.media.frames import Frames, Span, VideoInfo
from retrieval.media.scan import FoundFile
from retrieval.pipeline.distribute import SerialDistributor
from retrieval.pipeline.ray_pipeline import (
    SHARDS_DIRNAME,
    RayExecutor,
    RayOptions,
    RemoteFailure,
    ShardStore,
    _Decoder,
    _Embedder,
    code_runtime_env,
)
from retrieval.pipeline.run import IndexRun
from retrieval.pipeline.settings import IndexSettings
from retrieval.pipeline.stages import DecodeJob, EmbeddedFile, FileJob
from retrieval.store.catalog import Catalog
from retrieval.store.vectors.faiss_index import VectorIndex, index_path


@pytest.fixture(scope="module")
def ray_session():
    """One local Ray instance for the module: starting Ray costs seconds."""
    ray = pytest.importorskip("ray", reason='Ray is not importable (pip install "ray[data]")', exc_type=ImportError)
    ray.init(num_cpus=2, include_dashboard=False, runtime_env=code_runtime_env(local=True),
             logging_level="warning", log_to_driver=False)
    yield ray
    ray.shutdown()


@pytest.fixture
def spec(tiny_models):
    return f"dinov2:{tiny_models['dinov2']}"


def local_index(tmp_path, folder, spec) -> Engine:
    engine = Engine(tmp_path / "local")
    engine.index(folder, [spec], distributor=SerialDistributor())
    return engine


def ray_index(engine: Engine, folder, spec, run_factory=None):
    """``Engine.index`` on the local Ray instance, or the run ``run_factory`` makes of the engine's catalog."""
    if run_factory is None:
        return engine.index(folder, [spec], IndexSettings(ray_address="local"))
    engine.index_dir.mkdir(parents=True, exist_ok=True)
    with Catalog(engine.catalog_path) as catalog:
        catalog.set_setting("root", str(folder))
        return run_factory(catalog).run(folder)


def catalog_rows(engine: Engine, spec: str):
    with Catalog(engine.catalog_path, read_only=True) as cat:
        files = cat.db.execute("SELECT * EXCLUDE (indexed_at) FROM files ORDER BY file_id").fetchall()
        units = cat.db.execute("SELECT * FROM units ORDER BY unit_id").fetchall()
        ids, matrix = cat.vectors(spec)
    return files, units, ids, matrix


def assert_same_index(a: Engine, b: Engine, spec: str) -> None:
    files_a, units_a, ids_a, vec_a = catalog_rows(a, spec)
    files_b, units_b, ids_b, vec_b = catalog_rows(b, spec)
    assert files_a == files_b
    assert units_a == units_b
    np.testing.assert_array_equal(ids_a, ids_b)
    np.testing.assert_allclose(vec_a, vec_b, atol=1e-5)
    index_a = VectorIndex.load(index_path(a.index_dir, spec))
    index_b = VectorIndex.load(index_path(b.index_dir, spec))
    scores_a, found_a = index_a.search(vec_a, 4)
    scores_b, found_b = index_b.search(vec_a, 4)
    np.testing.assert_array_equal(found_a, found_b)
    np.testing.assert_allclose(scores_a, scores_b, atol=1e-5)


def inline_stream(spec: str, frames: int):
    """The Ray stages' own code, run in this process in job order (an earlier run's work, without Ray)."""

    def stream(jobs):
        decoder = _Decoder(60.0, isolate=False)
        embedder = _Embedder([(spec, frames)], None, False, threads=torch.get_num_threads())
        for k, job in enumerate(jobs):
            batch = {"i": np.array([k]), "job": np.array([pickle.dumps(job)], dtype=object)}
            yield k, pickle.loads(embedder(decoder(batch))["blob"][0])

    return stream


class Stop(BaseException):  # like Ctrl-C: not an error of one file
    pass


# -- Ray indexing -----------------------------------------------------------------------------------
@pytest.mark.slow
def test_ray_run_writes_the_local_runs_catalog_and_faiss_index(ray_session, tmp_path, video_folder, spec):
    (video_folder / "broken.mp4").write_bytes(b"not a video" * 100)
    local = local_index(tmp_path, video_folder, spec)
    engine = Engine(tmp_path / "ray")
    report = ray_index(engine, video_folder, spec)
    assert (report.found, report.indexed, report.computed, report.reused) == (5, 4, 5, 0)
    assert [path for path, _ in report.failed] == ["broken.mp4"]
    assert_same_index(local, engine, spec)
    assert not (engine.index_dir / SHARDS_DIRNAME).exists()  # merged, then dropped

    again = ray_index(engine, video_folder, spec)  # nothing changed: nothing reaches Ray
    assert (again.indexed, again.unchanged, again.computed, again.failed_earlier) == (0, 4, 0, 1)


@pytest.mark.slow
def test_interrupted_run_resumes_from_its_shards_without_recomputing_them(ray_session, tmp_path, video_folder,
                                                                          spec):
    local = local_index(tmp_path, video_folder, spec)
    engine = Engine(tmp_path / "ray")
    model = engine.indexer(spec)

    def interrupted(catalog):
        def stop_at_first_file(event, data):
            if event == "file":
                raise Stop  # the run dies right after committing its first file
        executor = RayExecutor.in_index(engine.index_dir, RayOptions(address=None, shard_files=2))
        executor._stream = inline_stream(spec, model.frames_per_unit)
        return IndexRun(catalog, engine.index_dir, [model], executor, progress=stop_at_first_file)

    with pytest.raises(Stop):
        ray_index(engine, video_folder, spec, run_factory=interrupted)
    sharded = {key[0] for key in ShardStore(engine.index_dir / SHARDS_DIRNAME).manifest()}
    assert sharded == {"campus_01.mp4", "campus_02.mp4"}  # one shard of two files; only the first committed

    report = ray_index(engine, video_folder, spec)
    assert (report.indexed, report.reused, report.computed) == (3, 1, 2)  # campus_02 came from its shard
    assert_same_index(local, engine, spec)


# -- the stage's bookkeeping (no Ray needed) --------------------------------------------------------
def fake_job(i: int) -> FileJob:
    return FileJob(DecodeJob(FoundFile(f"/videos/{i}.mp4", f"{i}.mp4", 1000 + i, 1.5 + i), (as_spec(8),), None),
                   ("m:x",))


FAKE_MODEL = SimpleNamespace(model_id="m:x", frames_per_unit=8, protocol="fast")  # what the executor reads of one


def fake_result(i: int) -> EmbeddedFile:
    frames = {8: [Frames(np.zeros((0, 0, 0, 3), np.uint8), np.linspace(0, 1, 8) + i, tuple(range(8)))]}
    vector = np.random.default_rng(i).normal(size=(1, 16)).astype(np.float32)
    return EmbeddedFile(VideoInfo(30, 25.0, 1.2, 64, 48, "pyav"), f"hash{i}", [Span(0, 0.0, 1.2)], frames,
                        {"m:x": vector})


def run_stage(root, jobs, results: dict, fail_after: int | None = None, shard_files: int = 10):
    """Drive an executor whose 'cluster' returns ``results`` (by job index), in reverse order."""
    stage = RayExecutor(ShardStore(root), RayOptions(shard_files=shard_files))
    decodes = [job.decode for job in jobs]
    asked = []

    def stream(todo):
        asked.extend(job.file.rel for job in todo)
        for n, k in enumerate(reversed(range(len(todo)))):
            if fail_after is not None and n == fail_after:
                raise RuntimeError("node lost")
            yield k, results[decodes.index(todo[k])]

    stage._stream = stream
    return stage, asked


def test_stage_hands_results_on_in_job_order_and_keeps_computed_work_when_the_cluster_fails(tmp_path):
    jobs = [fake_job(i) for i in range(4)]
    results = {i: fake_result(i) for i in range(4)}
    results[1] = RemoteFailure("decord: cannot open")
    stage, asked = run_stage(tmp_path, jobs, results, fail_after=2)
    with pytest.raises(RuntimeError, match="node lost"):
        list(stage.embed(jobs, [FAKE_MODEL]))
    # files 3 and 2 arrived before the failure: they are in a shard; the failure is not
    assert {k[0] for k in ShardStore(tmp_path).manifest()} == {"3.mp4", "2.mp4"}

    stage, asked = run_stage(tmp_path, jobs, results)
    out = list(stage.embed(jobs, [FAKE_MODEL]))
    assert [job.file.rel for job, _ in out] == ["0.mp4", "1.mp4", "2.mp4", "3.mp4"]
    assert asked == ["0.mp4", "1.mp4"] and stage.reused == 2
    assert isinstance(out[1][1], RemoteFailure)
    reused = out[3][1]
    assert reused.content_hash == "hash3" and reused.spans == results[3].spans
    np.testing.assert_array_equal(reused.vectors["m:x"], results[3].vectors["m:x"])
    (reused_units,), (computed_units,) = reused.frames.values(), results[3].frames.values()
    np.testing.assert_array_equal(reused_units[0].timestamps, computed_units[0].timestamps)


def test_a_shard_for_other_settings_or_a_damaged_shard_is_recomputed(tmp_path):
    jobs = [fake_job(i) for i in range(2)]
    results = {i: fake_result(i) for i in range(2)}
    stage, _ = run_stage(tmp_path, jobs, results, shard_files=1)
    list(stage.embed(jobs, [FAKE_MODEL]))
    store = ShardStore(tmp_path)
    first = jobs[0].decode
    assert store.find(first, {"m:x": 8}) is not None
    assert store.find(first, {"m:x": 16}) is None  # another frame count
    assert store.find(first, {"m:x": 8, "other:y": 8}) is None  # an indexer it does not hold
    assert store.find(DecodeJob(first.file, (as_spec(8),), 10.0), {"m:x": 8}) is None  # another segment length
    assert store.find(DecodeJob(first.file, (as_spec(8),), None, shots=ShotRule("content")), {"m:x": 8}) is None
    npz = store.manifest()[("0.mp4", 1000, 1.5, "", first.short_side)][0]
    npz.write_bytes(npz.read_bytes()[:40])
    assert ShardStore(tmp_path).find(first, {"m:x": 8}) is None


@pytest.mark.slow
def test_the_captioner_runs_in_ray_actors_and_stores_what_a_local_run_stores(ray_session, tmp_path, video_folder,
                                                                            spec):
    from bench.tiny import vlm as tiny_vlm

    captioner = f"internvl:{tiny_vlm.build_internvl(tmp_path / 'internvl')}"
    local = Engine(tmp_path / "local")
    local.index(video_folder, [spec], IndexSettings(captioner=captioner), distributor=SerialDistributor())
    remote = Engine(tmp_path / "ray")
    report = remote.index(video_folder, [spec], IndexSettings(ray_address="local", captioner=captioner))
    assert remote.models.rerankers() == []  # the driver never loaded the LMM: the actors did
    assert (report.described, report.describe_calls) == (4, 24)

    def answers(engine):
        with Catalog(engine.catalog_path, read_only=True) as cat:
            return cat.db.execute("SELECT content_hash, start_s, end_s, concept, model, revision, prompt_version, "
                                  "text, status FROM descriptions ORDER BY ALL").fetchall()

    assert answers(remote) == answers(local) and len(answers(local)) == 24
    again = remote.index(video_folder, [spec], IndexSettings(ray_address="local", captioner=captioner))
    assert again.describe_calls == 0


@pytest.mark.slow
def test_a_ray_run_writes_the_local_runs_vectors_to_lance(ray_session, tmp_path, video_folder, spec):
    from retrieval.store.vectors import lance_sync
    from retrieval.store.vectors.lance_store import LanceVectors

    local, remote = Engine(tmp_path / "local"), Engine(tmp_path / "ray")
    local.index(video_folder, [spec], IndexSettings(store="lance"), distributor=SerialDistributor())
    remote.index(video_folder, [spec], IndexSettings(ray_address="local", store="lance"))

    def table(engine):
        with Catalog(engine.catalog_path, read_only=True) as catalog:
            held = LanceVectors(lance_sync.location(catalog, engine.index_dir), spec)
        ids = np.sort(held.unit_ids())
        return ids, held.vectors(ids)

    (ids_a, vec_a), (ids_b, vec_b) = table(local), table(remote)
    assert len(ids_a) and np.array_equal(ids_a, ids_b)
    np.testing.assert_allclose(vec_a, vec_b, atol=1e-5)
