"""Reading VidDiffBench-shaped folders and prediction files."""

import json
from pathlib import Path

import pytest

from bench.loaders import BenchDataError
from bench.viddiff.data import (
    DOMAIN_FPS,
    align_predictions,
    detect_mode,
    read_dataset,
    read_predictions,
)
from retrieval.core.user_files import DATA_FILE_LIMIT


def row(key="s0", **over):
    base = {"sample_key": key, "split": "easy", "domain": "fitness", "action": "fitness_3", "action_name": "squat",
            "action_description": "a bodyweight squat",
            "videos": [{"path": "videos/a.mp4", "frames_trim": [2, 40]}, {"path": "videos/b.mp4", "frames_trim": None}],
            "differences_annotated": {"1": {"description": "deeper"}, "0": {"description": "wider"}, "2": None,
                                      "3": {"description": "faster"}},
            "differences_gt": {"0": "a", "1": "c", "2": None, "3": "b"},
            "n_differences_open_prediction": 4}
    return {**base, **over}


@pytest.fixture
def folder(tmp_path):
    (tmp_path / "videos").mkdir()
    for name in ("a.mp4", "b.mp4"):
        (tmp_path / "videos" / name).write_bytes(b"")
    return tmp_path


def write_jsonl(path: Path, rows):
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")


def test_a_jsonl_row_with_json_strings_as_in_the_parquet(folder):
    r = row()
    for field in ("videos", "differences_annotated", "differences_gt"):
        r[field] = json.dumps(r[field])
    write_jsonl(folder / "dataset.jsonl", [r])
    [s] = read_dataset(folder)
    assert (s.sample_key, s.split, s.domain, s.action, s.action_name, s.n_open) == (
        "s0", "easy", "fitness", "fitness_3", "squat", 4)
    assert s.gt == {"0": "a", "1": "c", "3": "b"}  # the null label is gone
    assert list(s.differences.items()) == [("1", "deeper"), ("0", "wider"), ("3", "faster")]  # annotation order
    assert s.videos == ((folder / "videos/a.mp4", (2, 40)), (folder / "videos/b.mp4", None))
    assert s.problems == ()


def test_json_list_and_test_jsonl_layouts_and_a_file_named_directly(folder):
    (folder / "dataset.json").write_text(json.dumps([row("x"), row("y")]))
    assert [s.sample_key for s in read_dataset(folder)] == ["x", "y"]
    (folder / "dataset.json").unlink()
    write_jsonl(folder / "test.jsonl", [row("z")])
    assert [s.sample_key for s in read_dataset(folder)] == ["z"]
    assert [s.sample_key for s in read_dataset(folder / "test.jsonl")] == ["z"]


def test_a_missing_video_is_a_problem_of_its_sample_not_a_crash(folder, tmp_path_factory):
    elsewhere = tmp_path_factory.mktemp("abs") / "c.mp4"
    elsewhere.write_bytes(b"")
    videos = [{"path": str(elsewhere), "frames_trim": [0, 1]}, {"path": "videos/gone.mp4", "frames_trim": [0, 1]}]
    write_jsonl(folder / "dataset.jsonl", [row(videos=videos), row("s1")])
    s0, s1 = read_dataset(folder)
    assert s0.videos[0][0] == elsewhere
    assert s0.problems == (f"video not found: {folder / 'videos/gone.mp4'}",) and s1.problems == ()


@pytest.mark.parametrize("trim, read, problem", [
    ([10, None], (10, None), False),  # slice(*frames_trim) takes open and negative bounds
    ([-30, -1, None], (-30, -1), False),
    (["10", 40], None, True),  # not frame numbers: the sample is not asked, rather than asked whole
    ([10, 40, 2], None, True),
    ([10], None, True),
])
def test_frames_trim_is_read_as_the_bounds_of_a_slice(folder, trim, read, problem):
    videos = [{"path": "videos/a.mp4", "frames_trim": trim}, {"path": "videos/b.mp4"}]
    write_jsonl(folder / "dataset.jsonl", [row(videos=videos)])
    [s] = read_dataset(folder)
    assert s.videos == ((folder / "videos/a.mp4", read), (folder / "videos/b.mp4", None))
    assert bool(s.problems) == problem and all("frames_trim" in p for p in s.problems)


def test_a_label_without_a_description_is_reported(folder):
    write_jsonl(folder / "dataset.jsonl", [row(differences_gt={"0": "a", "5": "b"})])
    [s] = read_dataset(folder)
    assert s.differences["5"] == "" and any("difference 5" in p for p in s.problems)


@pytest.mark.parametrize("rows, message", [
    ([{"split": "easy"}], "lacks sample_key"),
    ([row(), row()], "appears more than once"),
    ([row(differences_gt="{not json")], "differences_gt .*not valid JSON"),
    ([], "no rows"),
])
def test_bad_datasets(folder, rows, message):
    write_jsonl(folder / "dataset.jsonl", rows)
    with pytest.raises(BenchDataError, match=message):
        read_dataset(folder)


def test_a_dataset_past_the_data_limit_is_refused_after_reading_the_limit(folder):
    with (folder / "dataset.jsonl").open("wb") as fh:  # sparse: no disk spent
        fh.write(json.dumps(row()).encode() + b"\n")
        fh.truncate(DATA_FILE_LIMIT + 1)
    with pytest.raises(BenchDataError, match=r"^dataset .*dataset\.jsonl is larger than 64 MiB"):
        read_dataset(folder)


@pytest.mark.parametrize("where", ["line", "field"])
def test_json_nested_past_the_depth_limit_is_one_line_naming_the_row(folder, where):
    deep = "[" * 100_000 + "]" * 100_000  # Python's parser would stop in a RecursionError
    rows = [json.dumps(row("s0")), deep if where == "line" else json.dumps(row("s1", differences_gt=deep))]
    (folder / "dataset.jsonl").write_text("\n".join(rows) + "\n")
    said = r"line 2" if where == "line" else r"sample s1: differences_gt"
    with pytest.raises(BenchDataError, match=rf"^dataset .*{said}.* nests more than 64 levels deep"):
        read_dataset(folder)


def test_a_folder_without_rows(tmp_path):
    with pytest.raises(BenchDataError, match="dataset.jsonl"):
        read_dataset(tmp_path)


def test_domain_fps_are_the_baselines():
    assert DOMAIN_FPS == {"fitness": 4, "ballsports": 5, "diving": 6, "music": 1, "surgery": 1}


def test_predictions_keyed_by_sample_or_listed_in_order(folder, tmp_path):
    write_jsonl(folder / "dataset.jsonl", [row("s0"), row("s1"), row("s2")])
    samples = read_dataset(folder)
    keyed = tmp_path / "keyed.json"
    keyed.write_text(json.dumps({"s0": {"0": "a"}, "s2": {"3": "b"}, "other": {"0": "a"}}))
    aligned, absent, unknown = align_predictions(samples, read_predictions(keyed))
    assert aligned == [{"0": "a"}, {}, {"3": "b"}] and absent == ["s1"] and unknown == ["other"]
    listed = tmp_path / "listed.json"
    listed.write_text(json.dumps([{"0": "a"}, None, {"3": "b"}]))
    assert align_predictions(samples, read_predictions(listed))[:2] == ([{"0": "a"}, {}, {"3": "b"}], ["s1"])
    with pytest.raises(BenchDataError, match="follow the dataset order"):
        align_predictions(samples, [{"0": "a"}])
    with pytest.raises(BenchDataError, match="no sample_key matches"):
        align_predictions(samples, {"zz": {"0": "a"}})


@pytest.mark.parametrize("text, message", [("[]", "empty"), ("{}", "empty"), ('"a"', "expected"),
                                           ('{"s0": ["a"]}', "not an object"), ("{", "not valid JSON")])
def test_bad_prediction_files(tmp_path, text, message):
    path = tmp_path / "p.json"
    path.write_text(text)
    with pytest.raises(BenchDataError, match=message):
        read_predictions(path)


def test_detect_mode():
    assert detect_mode([{}, {"0": "a"}]) == "closed"
    assert detect_mode([{"0": {"description": "x", "prediction": "a"}}]) == "open"
    with pytest.raises(BenchDataError):
        detect_mode([{}, {}])
