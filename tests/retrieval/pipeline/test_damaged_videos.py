"""An index run over damaged videos: each is indexed from the frames that decode, with what did not decode
stored with the file, said in the run's notes and shown by `convis ls`; a file of which nothing decodes fails."""

import json
import math
import shutil

import pytest
from typer.testing import CliRunner

from retrieval.api import Engine
from retrieval.cli.app import app
from retrieval.core.segmentation import ShotRule
from retrieval.media.damaged import NOTHING_DECODES
from retrieval.pipeline import stages
from retrieval.pipeline.distribute import SerialDistributor
from retrieval.pipeline.settings import IndexSettings
from retrieval.store.catalog import Catalog
from tests import media

DAMAGED = {"hole.mp4": media.holed, "overwritten.mp4": media.overwritten, "cut.mp4": media.cut_short}


@pytest.fixture
def folder(tmp_path, example_videos):
    videos = tmp_path / "videos"
    videos.mkdir()
    cup = example_videos / "cup.mp4"
    for name, damage in DAMAGED.items():
        damage(cup, videos / name)
    media.zeroed(cup, videos / "zeroed.mp4")
    shutil.copy(cup, videos / "cup.mp4")
    return videos


@pytest.mark.parametrize("units", [{"segment_seconds": 2.0}, {"shots": ShotRule("content")}], ids=["2s", "shots"])
def test_damaged_videos_are_indexed_from_what_decodes_and_say_what_did_not(tmp_path, folder, tiny_models, units):
    engine = Engine(tmp_path / "index")
    report = engine.index(folder, [f"dinov2:{tiny_models['dinov2']}"], IndexSettings(workers=1, **units))
    assert report.failed == [("zeroed.mp4", NOTHING_DECODES)] and report.indexed == 4
    said = sorted(note.split(": ")[0] for note in report.notes if "could not be decoded; indexed" in note)
    assert said == sorted(DAMAGED)
    files = {f.path: f for f in engine.files()}
    assert files["cup.mp4"].status == "ok" and files["cup.mp4"].error is None
    for name in DAMAGED:
        assert files[name].status == "ok" and "frames could not be decoded" in files[name].error
        assert files[name].units
    _, decodes, fps = media.frames_that_decode(folder / "cut.mp4")
    assert all(start < len(decodes) / fps for _, start, _ in files["cut.mp4"].units)  # none past where it ends
    listed = json.loads(CliRunner().invoke(app, ["ls", str(tmp_path / "index"), "--json"]).stdout)["files"]
    shown = {f["path"]: f for f in listed}
    assert shown["hole.mp4"]["undecoded"] == files["hole.mp4"].error and shown["hole.mp4"]["error"] is None
    assert shown["zeroed.mp4"]["error"] == NOTHING_DECODES and shown["zeroed.mp4"]["undecoded"] is None


def test_a_damaged_file_read_a_window_at_a_time_gets_the_units_and_gaps_of_a_whole_read(tmp_path, folder,
                                                                                       tiny_models, monkeypatch):
    for name in ("cup.mp4", "zeroed.mp4", "overwritten.mp4"):
        (folder / name).unlink()
    settings = IndexSettings(segment_seconds=1.0)
    whole = Engine(tmp_path / "whole")
    whole.index(folder, [f"dinov2:{tiny_models['dinov2']}"], settings, distributor=SerialDistributor())
    monkeypatch.setattr(stages, "WINDOW_FRAMES", 16)  # two 1 s units of 8 frames a window
    windowed = Engine(tmp_path / "windowed")
    report = windowed.index(folder, [f"dinov2:{tiny_models['dinov2']}"], settings, distributor=SerialDistributor())
    assert report.indexed == 2 and report.failed == []
    assert _units(whole) == _units(windowed)
    for name in ("cut.mp4", "hole.mp4"):  # windows past the cut have no unit; the hole lies in one window
        listed, decodes, _ = media.frames_that_decode(folder / name)
        units = [u for u in _units(windowed) if u[0] == name]
        assert 2 < len(units) < math.ceil(listed / units[0][5] / 1.0)  # some units, not those with no frame
        assert f"{listed - len(decodes)} of {listed} frames could not be decoded" in units[0][4]


def _units(engine):
    with Catalog(engine.catalog_path, read_only=True) as cat:
        return cat.db.execute("SELECT f.path, u.segment, u.start_s, u.frame_times, f.error, f.fps FROM files f "
                              "JOIN units u USING (file_id) ORDER BY f.path, u.segment").fetchall()
