"""``--segment shots``: units follow the shots a detector finds, stored with what starts each and how surely,
kept for later runs, re-cut when the rule changes; a long file is read a window at a time like fixed units."""

import json
import shutil
from dataclasses import replace

import numpy as np
import pytest
from typer.testing import CliRunner

from retrieval.api import Engine
from retrieval.cli.app import app
from retrieval.core.segmentation import SegmentationError, ShotRule
from retrieval.media import shot_units
from retrieval.media.shot_units import cut_shots
from retrieval.pipeline import stages
from retrieval.pipeline.settings import IndexSettings
from retrieval.store.catalog import Catalog
from tests.paths import EXAMPLES
from tests.retrieval.pipeline.test_windows import Recording

RULE = ShotRule("content")


@pytest.fixture
def shot_folder(tmp_path):
    folder = tmp_path / "videos"
    folder.mkdir()
    for name in ("bikes.mp4", "cup.mp4"):
        shutil.copy(EXAMPLES / name, folder / name)
    return folder


def index(engine, folder, tiny_models, distributor=None, **settings):
    return engine.index(folder, [f"dinov2:{tiny_models['dinov2']}"], IndexSettings(**settings),
                        distributor=distributor or Recording())


def stored_units(engine, path):
    with Catalog(engine.catalog_path, read_only=True) as catalog:
        return catalog.file_units(path)


def test_shot_units_are_stored_with_their_boundaries_and_kept_for_later_runs(tmp_path, tiny_models, shot_folder):
    engine = Engine(tmp_path / "index")
    report = index(engine, shot_folder, tiny_models, shots=RULE)
    assert report.failed == [] and report.indexed == 2
    assert any(note.startswith("shot units (content; at least 1 s, at most 60 s)") for note in report.notes)
    expected = cut_shots(shot_folder / "bikes.mp4", RULE, ()).units
    units = stored_units(engine, "bikes.mp4")
    assert [(u.start, u.end, u.boundary, u.confidence) for u in units] == \
        [(pytest.approx(s.start, abs=1e-3), pytest.approx(s.end, abs=1e-3), s.boundary, s.confidence)
         for s in expected]
    assert len(units) == 5 and [u.boundary for u in stored_units(engine, "cup.mp4")] == ["start"]
    info = engine.info()
    assert info["segmentation"] == "shots:content:1:60" and info["segment_seconds"] is None
    assert info["shots"]["cuts"] == 4 and info["shots"]["file_starts"] == 2
    listing = {f.path: f for f in engine.files()}["bikes.mp4"]
    assert listing.units_by == "shots:content:1:60" and listing.cuts[1][0] == "cut"

    again = index(engine, shot_folder, tiny_models)  # no --segment: the index's own rule
    assert again.unchanged == 2 and again.indexed == 0


def test_a_new_rule_re_cuts_the_files_and_fixed_units_come_back(tmp_path, tiny_models, shot_folder):
    engine = Engine(tmp_path / "index")
    index(engine, shot_folder, tiny_models, shots=RULE)
    longer = index(engine, shot_folder, tiny_models, shots=ShotRule("content", 1.0, 2.0))
    assert longer.indexed == 2  # a new longest unit: every file is cut again
    assert all(u.end - u.start <= 2.0 + 1e-6 for u in stored_units(engine, "bikes.mp4"))
    assert "split" in {u.boundary for u in stored_units(engine, "bikes.mp4")}
    fixed = index(engine, shot_folder, tiny_models, segment_seconds=5.0)
    assert fixed.indexed == 2
    assert [(u.start, u.end, u.boundary) for u in stored_units(engine, "bikes.mp4")] == \
        [(0.0, 5.0, None), (5.0, 10.0, None)]
    assert engine.info()["shots"] is None


def test_a_long_file_over_the_one_pass_budget_is_read_a_window_at_a_time_into_the_same_units(
        tmp_path, tiny_models, shot_folder, monkeypatch):
    one_pass = Engine(tmp_path / "one")
    index(one_pass, shot_folder, tiny_models, shots=RULE)
    monkeypatch.setattr(shot_units, "ONE_PASS_BYTES", 0)
    monkeypatch.setattr(stages, "WINDOW_FRAMES", 10)
    windowed = Recording()
    two_pass = Engine(tmp_path / "two")
    report = index(two_pass, shot_folder, tiny_models, windowed, shots=RULE)
    assert report.failed == []
    # 8 frames a unit and at most 10 a window: each of the five shots is a window of its own
    assert sorted(w for rel, w, _ in windowed.tasks if rel == "bikes.mp4") == [0, 1, 2, 3, 4]
    for path in ("bikes.mp4", "cup.mp4"):
        two, one = stored_units(two_pass, path), stored_units(one_pass, path)
        assert [replace(u, frame_times=()) for u in two] == [replace(u, frame_times=()) for u in one]
        # the seeking decode is decord's, whose times are single-precision
        np.testing.assert_allclose([u.frame_times for u in two], [u.frame_times for u in one], atol=1e-5)


@pytest.mark.parametrize("args, message", [
    (["--segment", "shots:histogram"], "unknown shot detector"),
    (["--segment", "10s", "--shot-min", "2"], "go with --segment shots"),
    (["--segment", "shots", "--shot-min", "5", "--shot-max", "2"], "min <= max"),
])
def test_the_cli_refuses_a_shot_rule_it_cannot_cut_with_in_one_line(tmp_path, shot_folder, args, message):
    result = CliRunner().invoke(app, ["index", str(shot_folder), "--index-dir", str(tmp_path / "index"), *args])
    assert result.exit_code != 0
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and message in lines[0] and "Traceback" not in result.output
    assert not (tmp_path / "index").exists()


@pytest.mark.parametrize("lengths, label", [((0.1, 0.2), "shots:content:0.1:0.2"),
                                            ((1, 100_000), "shots:content:1:100000")])
def test_an_index_cut_by_a_rule_now_out_of_range_still_answers_info_and_resumes(
        tmp_path, tiny_models, monkeypatch, lengths, label):
    rule = ShotRule("content", *lengths)  # what the index reads back from its label
    folder = tmp_path / "videos"
    folder.mkdir()
    shutil.copy(EXAMPLES / "carphone_pristine.mp4", folder / "phone.mp4")
    with monkeypatch.context() as older:  # the convis that built it took any shot lengths
        older.setattr(ShotRule, "check_lengths", lambda self: None)
        assert index(Engine(tmp_path / "index"), folder, tiny_models, shots=rule).indexed == 1
    with pytest.raises(SegmentationError, match="--shot-max must be"):
        IndexSettings(shots=rule)  # asked for today, the rule is refused
    shown = CliRunner().invoke(app, ["info", "--index-dir", str(tmp_path / "index"), "--json"])
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.stdout)["segmentation"] == label
    again = CliRunner().invoke(app, ["index", str(folder), "--index-dir", str(tmp_path / "index"), "--json"])
    assert again.exit_code == 0, again.output
    assert json.loads(again.stdout)["unchanged"] == 1


def test_ls_json_shows_each_shot_units_boundary_and_confidence(tmp_path, tiny_models, shot_folder):
    engine = Engine(tmp_path / "index")
    index(engine, shot_folder, tiny_models, shots=RULE)
    result = CliRunner().invoke(app, ["ls", "--index-dir", str(tmp_path / "index"), "--json"])
    assert result.exit_code == 0, result.output
    files = {f["path"]: f for f in json.loads(result.output)["files"]}
    units = files["bikes.mp4"]["units"]
    assert files["bikes.mp4"]["units_by"] == "shots:content:1:60"
    assert units[0]["boundary"] == "start" and units[0]["confidence"] is None
    assert all(u["boundary"] == "cut" and 0 < u["confidence"] <= 1 for u in units[1:])


def test_an_indexer_added_later_is_sampled_at_the_stored_shots_without_cutting_again(
        tmp_path, tiny_models, shot_folder, monkeypatch):
    engine = Engine(tmp_path / "index")
    index(engine, shot_folder, tiny_models, shots=RULE)
    before = stored_units(engine, "bikes.mp4")

    def no_second_cut(*args, **kwargs):
        raise AssertionError("the file was cut again")

    monkeypatch.setattr(stages, "cut_shots", no_second_cut)
    report = engine.index(shot_folder, [f"dinov2:{tiny_models['dinov2']}", f"videomae:{tiny_models['videomae']}"],
                          IndexSettings(), distributor=Recording())
    assert report.failed == [] and report.indexed == 2
    assert stored_units(engine, "bikes.mp4") == before
    with Catalog(engine.catalog_path, read_only=True) as catalog:
        videomae = next(r.indexer for r in catalog.indexers() if r.indexer.startswith("videomae"))
        assert catalog.unit_vectors("bikes.mp4", videomae).shape[0] == len(before)


def test_a_detector_out_of_memory_is_a_failure_a_later_run_retries(monkeypatch):
    from retrieval.media import shot_units
    from retrieval.pipeline.stages import is_transient

    def raising(exc):
        def detect(self, frames, fps):
            raise exc
        return detect

    for exc, transient in ((MemoryError(), True), (RuntimeError("CUDA out of memory. Tried to allocate"), True),
                           (RuntimeError("bad weights"), False)):
        monkeypatch.setattr(shot_units.get_detector("content").__class__, "detect", raising(exc))
        with pytest.raises(shot_units.DecodeError) as failed:
            cut_shots(EXAMPLES / "cup.mp4", RULE, ())
        assert failed.value.args[0].startswith("shot detection failed") and is_transient(failed.value) is transient


def test_auto_keeps_the_detector_the_index_was_cut_with_even_with_new_lengths(tmp_path):
    from retrieval.pipeline.catalog_settings import SEGMENT, auto_shots

    with Catalog(tmp_path / "catalog.duckdb") as catalog:
        assert auto_shots(catalog, ShotRule("auto"), lambda: "content") == RULE
        catalog.set_setting(SEGMENT, "shots:transnet:1:60")
        assert auto_shots(catalog, ShotRule("auto", 2.0, 30.0), lambda: "content") == ShotRule("transnet", 2.0, 30.0)
        assert auto_shots(catalog, ShotRule("content"), lambda: "transnet") == RULE  # a named detector is kept
