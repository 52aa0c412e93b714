"""`convis bench covr run`: convis end to end on a TF-CoVR-shaped folder of the example clips."""

import json
import shutil
from collections import Counter
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import typer
from typer.testing import CliRunner

from bench.covr.metrics import CovrQuery, covr_metrics, mask_query, read_annotations, read_ranking
from bench.covr.run import rank_query
from retrieval.cli.bench.covr import register
from tests.indexes import CAPTIONS
from tests.paths import EXAMPLES

ROWS = [
    ("0", "box.mp4", "cup.mp4", "['cup']", "a cup instead of a box"),
    ("1", "campus_01.mp4", "campus_02.mp4", "['campus_02', 'campus_03']", "the same square from another camera"),
    ("2", "campus_03.mp4", "campus_02.mp4", "['campus_02']", "the square from 1 camera more"),
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
    assert set(ranking) == {"0", "1", "2"}
    assert ranking["0"][0] == "cup"  # the change wins
    # the gallery is the target_video column, one entry a row: campus_02 twice, files no row targets never
    gallery = [row[2].removesuffix(".mp4") for row in ROWS]
    for query_id, video, *_ in ROWS:
        assert sorted(ranking[query_id]) == sorted(v for v in gallery if v != video.removesuffix(".mp4"))
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


class Hits:
    """An engine whose every query answers ``units`` (file names, best first), cut to the query's k."""

    def __init__(self, units):
        self.units, self.asked = units, []

    def query(self, request):
        self.asked.append(request)
        return SimpleNamespace(hits=[SimpleNamespace(path=f"videos/{u}.mp4") for u in self.units[:request.k]])


def tfcovr_top50(scores: dict[str, float], gallery: list[str], query_video: str) -> list[str]:
    """TF-CoVR's ranking (``TestCirco``): one similarity a gallery entry, the query's own entries - 100, argsort
    descending, the top 50 entries' ids."""
    sims = np.array([scores[v] for v in gallery]) - 100 * np.array([v == query_video for v in gallery])
    return [gallery[i] for i in np.argsort(sims)[::-1][:50]]


def test_the_gallery_is_one_entry_a_row_with_repeats_and_ranks_as_the_reference_ranks_it():
    rng = np.random.default_rng(5)
    videos = [f"v{i}" for i in range(40)]
    for _ in range(20):
        gallery = [str(v) for v in rng.choice(videos[:30], size=int(rng.integers(5, 90)))]  # v30.. target no row
        query = CovrQuery("q", str(rng.choice(videos)), gallery[0], (gallery[0],), "more")
        scores = dict(zip(videos, rng.permutation(len(videos)) / len(videos), strict=True))
        # the engine: each file's units in score order (a file comes back more than once), never the anchor's own
        best = sorted((v for v in videos if v != query.query_video), key=lambda v: -scores[v])
        units = [v for v in best for _ in range(2)]
        by_id = {v: Path(f"videos/{v}.mp4") for v in videos}
        ours = rank_query(Hits(units), query, by_id, Counter(gallery))
        assert ours == mask_query(tfcovr_top50(scores, gallery, query.query_video), query.query_video)


def test_more_hits_are_asked_for_until_gallery_entries_fill_the_fifty():
    units = [f"other{i}" for i in range(400)] + [f"t{i}" for i in range(60)]  # files no row targets come first
    engine = Hits(units)
    counts = Counter({f"t{i}": 1 for i in range(60)})
    by_id = {"q": Path("videos/q.mp4")}
    ranked = rank_query(engine, CovrQuery("0", "q", "t0", ("t0",), "x"), by_id, counts)
    assert ranked == [f"t{i}" for i in range(50)] and [r.k for r in engine.asked] == [200, 800]


def test_a_small_gallery_in_a_larger_index_stops_once_every_entry_is_ranked():
    # ten gallery entries (t3 twice) among thousands of other units: the first 200 hits hold them all
    units = [f"o{i}" for i in range(5000)]
    for i in range(9):
        units.insert(20 * i, f"t{i}")
    engine = Hits(units)
    counts = Counter({**{f"t{i}": 1 for i in range(9)}, "t3": 2})
    query = CovrQuery("0", "q", "t0", ("t0",), "x")
    ranked = rank_query(engine, query, {"q": Path("videos/q.mp4")}, counts)
    assert sorted(ranked) == sorted(counts.elements()) and [r.k for r in engine.asked] == [200]


def test_more_hits_are_never_asked_for_than_a_query_returns():
    # gallery entries far down a large index: 200, 800, then the most a query returns, 1000, and no more
    units = [f"o{i}" for i in range(5000)]
    units[900:900] = ["t0", "t1"]
    units[4000:4000] = ["t2"]
    engine = Hits(units)
    counts = Counter(["t0", "t1", "t2"])
    ranked = rank_query(engine, CovrQuery("0", "q", "t0", ("t0",), "x"), {"q": Path("videos/q.mp4")}, counts)
    assert ranked == ["t0", "t1"] and [r.k for r in engine.asked] == [200, 800, 1000]


def test_the_modification_is_encoded_as_the_reference_cleans_it():
    engine = Hits(["t"])
    query = CovrQuery("0", "q", "t", ("t",), "Make it 2.5 Somersaults: (tucked)")
    rank_query(engine, query, {"q": Path("videos/q.mp4")}, Counter(["t"]), change_weight=2.0)
    change = engine.asked[0].change
    assert (change.text, change.weight) == ("make it two and a half somersaults tucked", 2.0)


def test_a_gallery_video_missing_from_the_folder_is_one_line(tmp_path):
    folder = _dataset(tmp_path)
    (folder / "videos" / "cup.mp4").unlink()
    result = CliRunner().invoke(_app(), ["covr", "run", "--dataset", str(folder), "--captions", str(CAPTIONS)])
    assert result.exit_code == 2 and "target video(s) of the gallery are not in" in result.output
    assert len(result.output.strip().splitlines()) == 1
