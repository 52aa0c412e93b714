"""`convis bench viddiff run`: convis end to end on a VidDiffBench-shaped folder of real clips, with a tiny random
Qwen2-VL through the real factory; its predictions are in VidDiff's format and `bench viddiff` reads them back."""

import json
import shutil

import av
import pytest
from typer.testing import CliRunner

from bench.tiny.vlm import build_qwen_vl
from retrieval.cli.bench import app


@pytest.fixture(scope="module")
def qwen(tmp_path_factory):
    return "qwen2-vl:" + str(build_qwen_vl(tmp_path_factory.mktemp("vlm") / "qwen2-vl-tiny"))


def _row(key, domain, a, b, trims, gt, n_open=2):
    return {"sample_key": key, "split": "easy", "domain": domain, "action": f"{domain}_0",
            "action_description": "riding a bike",
            "videos": json.dumps([{"path": a, "frames_trim": trims[0]}, {"path": b, "frames_trim": trims[1]}]),
            "differences_annotated": json.dumps({k: {"description": f"statement {k}"} for k in gt}),
            "differences_gt": json.dumps(gt), "n_differences_open_prediction": n_open}


@pytest.fixture
def dataset(tmp_path, example_videos):
    folder = tmp_path / "viddiff"
    (folder / "videos").mkdir(parents=True)
    for name in ("bikes.mp4", "box.mp4"):
        shutil.copy(example_videos / name, folder / "videos" / name)
    rows = [_row("s0", "fitness", "videos/bikes.mp4", "videos/box.mp4", ([25, 125], [0, 60]),
                 {"0": "a", "1": "b", "2": "c"}),
            _row("s1", "music", "videos/box.mp4", "videos/bikes.mp4", ([0, 90], [50, 250]), {"0": "b", "1": "a"}),
            _row("s2", "diving", "videos/missing.mp4", "videos/box.mp4", ([0, 9], [0, 9]), {"0": "a"})]
    (folder / "dataset.jsonl").write_text("\n".join(json.dumps(r) for r in rows))
    return folder


def _fps(path) -> float:
    with av.open(str(path)) as container:
        return float(container.streams.video[0].average_rate)


def test_a_closed_run_writes_viddiff_predictions_that_score_back_the_same(dataset, tmp_path, qwen, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    out = tmp_path / "out"
    ran = CliRunner().invoke(app, ["viddiff", "run", "--dataset", str(dataset), "--out", str(out), "-r", qwen,
                                   "--json"])
    assert ran.exit_code == 0, ran.output
    summary = json.loads(ran.stdout)
    assert (summary["asked"], summary["skipped"]) == (2, 1)
    assert summary["model_calls"] == 4  # only the differences labelled 'a' or 'b', once each
    predictions = json.loads((out / "predictions_closed.json").read_text())
    assert set(predictions) == {"s0", "s1"}
    assert set(predictions["s0"]) <= {"0", "1"} and set(predictions["s1"]) <= {"0", "1"}
    assert all(v in ("a", "b") for p in predictions.values() for v in p.values())
    details = json.loads((out / "details_closed.json").read_text())
    assert "video not found" in details["skipped"]["s2"]
    # fitness at 4 fps inside frames [25, 125) of bikes: VidDiff's stride int(fps / 4) from frame 25
    seen = details["samples"]["s0"]["seen"]
    stride = int(_fps(dataset / "videos" / "bikes.mp4") / 4)
    assert seen["a"]["indices"] == list(range(25, 125, stride))
    assert details["samples"]["s1"]["frames"] == "rate@1:75"  # music: 1 fps
    scored = CliRunner().invoke(app, ["viddiff", "--gt", str(dataset), "--pred", str(out / "predictions_closed.json"),
                                      "--json"])
    assert scored.exit_code == 0, scored.output
    back = json.loads(scored.stdout)
    assert back["overall"]["correct"] == summary["accuracy"]["overall"]["correct"]
    assert back["overall"]["scored"] == 5  # s2 was not asked: its difference counts as wrong
    assert summary["accuracy"]["overall"]["scored"] == 5  # the run's own figure scores it the same way
    # the leaderboard asked other models all statements at once: the run says its number is not theirs
    for note in (summary["comparability"], details["comparability"]):
        assert "not comparable with VidDiff's leaderboard" in note and "prompt_template_mode_2" in note
        assert qwen in note and "one statement at a time" in note
    table = CliRunner().invoke(app, ["viddiff", "run", "--dataset", str(dataset), "--out", str(out), "-r", qwen])
    assert table.exit_code == 0, table.output
    assert f"NOTE: {summary['comparability']}" in " ".join(table.stdout.split())


@pytest.mark.slow
def test_an_open_run_writes_items_and_says_what_it_could_not_read(dataset, tmp_path, qwen, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    out = tmp_path / "out"
    ran = CliRunner().invoke(app, ["viddiff", "run", "--dataset", str(dataset), "--out", str(out), "-r", qwen,
                                   "--mode", "open", "--frames", "family", "--json"])
    assert ran.exit_code == 0, ran.output
    details = json.loads((out / "details_open.json").read_text())
    for key in ("s0", "s1"):
        sample = details["samples"][key]
        assert sample["task"] == "open" and sample["frames"] == "per-second:8"
        # a random model writes no readable list: said, never silently empty
        assert sample["proposals"] or sample["unreadable"]
    assert json.loads((out / "predictions_open.json").read_text()).keys() == {"s0", "s1"}


def test_bad_options_are_one_line(dataset, tmp_path):
    for args, message in ((["--mode", "both"], "--mode is closed or open"),
                          (["--frames", "fast"], "--frames is domain or family")):
        ran = CliRunner().invoke(app, ["viddiff", "run", "--dataset", str(dataset), *args])
        assert ran.exit_code == 2 and message in ran.output
    ran = CliRunner().invoke(app, ["viddiff", "run", "--dataset", str(tmp_path / "nowhere")])
    assert ran.exit_code == 2 and len(ran.output.strip().splitlines()) == 1
