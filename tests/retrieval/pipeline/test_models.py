"""Indexers are built only when a file needs their vectors; a run's report times the whole call."""

import shutil
import time

import pytest

import retrieval.model_cache as model_cache
from retrieval.api import Engine
from retrieval.pipeline.distribute import SerialDistributor
from retrieval.pipeline.settings import IndexSettings


@pytest.fixture
def builds(monkeypatch):
    """The specs the engine builds models for, in order."""
    built = []
    real = model_cache.create_indexer

    def counting(spec, **kwargs):
        built.append(spec)
        return real(spec, **kwargs)

    monkeypatch.setattr(model_cache, "create_indexer", counting)
    return built


def index(tmp_path, folder, specs, **settings):
    return Engine(tmp_path / "index").index(folder, specs, IndexSettings(**settings), distributor=SerialDistributor())


def test_a_rerun_with_nothing_to_embed_builds_no_model(tmp_path, video_folder, tiny_models, builds):
    folder_spec = str(tiny_models["dinov2"])  # a weights folder: its id is worked out without building it
    index(tmp_path, video_folder, [folder_spec])
    assert builds == [folder_spec]
    for specs in ([folder_spec], [f"dinov2:{tiny_models['dinov2']}"], []):  # as asked first, by name, the index's
        report = index(tmp_path, video_folder, specs)
        assert (report.indexed, report.unchanged, report.failed) == (0, 4, [])
    assert builds == [folder_spec]


def test_a_new_file_builds_the_models_it_needs_once(tmp_path, video_folder, tiny_models, builds):
    specs = [f"dinov2:{tiny_models['dinov2']}", f"clip:{tiny_models['hf_clip']}"]
    index(tmp_path, video_folder, specs)
    builds.clear()
    shutil.copy(video_folder / "cup.mp4", video_folder / "cup_copy.mp4")
    shutil.copy(video_folder / "campus_01.mp4", video_folder / "campus_copy.mp4")
    report = index(tmp_path, video_folder, [], frames=4)
    assert (report.indexed, report.unchanged) == (2, 4) and sorted(builds) == sorted(specs)
    info = Engine(tmp_path / "index").info()
    assert {row["frames"] for row in info["indexers"]} == {4}  # built as this run samples


def test_an_indexer_new_to_the_index_is_built_and_the_others_are_not(tmp_path, video_folder, tiny_models, builds):
    first = f"dinov2:{tiny_models['dinov2']}"
    index(tmp_path, video_folder, [first])
    builds.clear()
    second = f"clip:{tiny_models['hf_clip']}"
    report = index(tmp_path, video_folder, [first, second])
    assert report.indexed == 4 and builds == [second]  # every file lacks only the new indexer's vectors


def test_the_report_times_the_whole_call_model_loading_included(tmp_path, video_folder, tiny_models, monkeypatch):
    real = model_cache.create_indexer

    def slow(spec, **kwargs):
        time.sleep(1.5)  # weights that take a while to load
        return real(spec, **kwargs)

    monkeypatch.setattr(model_cache, "create_indexer", slow)
    started = time.perf_counter()
    report = index(tmp_path, video_folder, [f"dinov2:{tiny_models['dinov2']}"])
    wall = time.perf_counter() - started
    assert 0.95 * wall <= report.seconds <= wall
