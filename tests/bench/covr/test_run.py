"""`convis bench covr run`: convis end to end on a TF-CoVR-shaped folder of the example clips."""

import json
import shutil

import typer
from typer.testing import CliRunner

from bench.covr.metrics import covr_metrics, read_annotations, read_ranking
from retrieval.cli.bench.covr import register
from tests.indexes import CAPTIONS
from tests.paths import EXAMPLES

ROWS = [
    ("0", "box.mp4", "cup.mp4", "['cup']", "a cup instead of a box"),
    ("1", "campus_01.mp4", "campus_02.mp4", "['campus_02', 'campus_03']", "the same square from another camera"),
]


def _app() -> typer.Typer:
    app = typer.Typer()
    app.callback()(lambda: None)
    register(app)
    return app


def _dataset(tmp_path):
    folder = tmp_path / "tfcovr"
    (folder / "videos").mkdir(parents=True)
    for name in ("box.mp4", "cup.mp4", "campus_01.mp4", "campus_02.mp4", "campus_03.mp4"):
        shutil.copy(EXAMPLES / name, folder / "videos" / name)
    lines = ["query_id,query_video,target_video,target_videos_ids,modification"]
    lines += [",".join([q, v, t, f'"{ids}"', m]) for q, v, t, ids, m in ROWS]
    (folder / "test.csv").write_text("\n".join(lines) + "\n")
    return folder


def test_a_run_ranks_every_row_writes_the_ranking_and_scores_it(tmp_path):
    folder = _dataset(tmp_path)
    result = CliRunner().invoke(_app(), ["covr", "run", "--dataset", str(folder), "--captions", str(CAPTIONS),
                                         "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    ranking = read_ranking(data["ranking"])
    assert set(ranking) == {"0", "1"}
    assert ranking["0"][0] == "cup" and "box" not in ranking["0"]  # the change wins; the query's video never shows
    assert all(len(r) == len(set(r)) <= 50 for r in ranking.values())  # each file once
    expected = covr_metrics(read_annotations(folder / "test.csv"), ranking)
    assert {k: v for k, v in data.items() if k != "ranking"} == expected
    assert data["Recall@5"] > 0


def test_a_folder_without_one_csv_or_without_a_text_signal_is_one_line(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    result = CliRunner().invoke(_app(), ["covr", "run", "--dataset", str(empty)])
    assert result.exit_code == 2 and "one annotation CSV" in result.output and len(result.output.splitlines()) == 1
    folder = _dataset(tmp_path)  # no captions and EfficientNet alone: nothing reads the modification
    result = CliRunner().invoke(_app(), ["covr", "run", "--dataset", str(folder), "-i", "efficientnet-lite0"])
    assert result.exit_code == 2 and "needs a signal that reads text" in result.output.splitlines()[-1]
