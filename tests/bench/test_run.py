"""`convis bench run` on a small folder laid out like ConViS-Bench (real clips, real EfficientNet weights)."""

import json
import shutil

import pytest
from typer.testing import CliRunner

from bench.loaders import load_pair_scores, load_retrieval_scores
from bench.run import model_folder
from bench.tiny.vlm import build_qwen_vl
from cli import app
from indexers.base import INDEXERS
from indexers.factory import available_indexers
from retrieval.store.catalog import Catalog

CLIPS = {"campus_01": "campus", "campus_02": "campus", "campus_03": "campus", "box": "hands", "cup": "hands",
         "bikes": "street"}
SAME_PLACE = {"campus"}


def rating(a: str, b: str) -> dict:
    same = CLIPS[a] == CLIPS[b]
    location = 5.0 if same and CLIPS[a] in SAME_PLACE else (3.0 if same else 1.0)
    action = 4.5 if same else 1.5
    return {"MainAction": action, "MainSubjects": action, "MainObjects": 2.0 + (a[0] == b[0]),
            "Location": location, "OrderOfActions": action - 0.5}


@pytest.fixture(scope="module")
def dataset(tmp_path_factory, example_videos):
    root = tmp_path_factory.mktemp("convis-bench")
    for name, domain in CLIPS.items():
        target = root / "videos_trimmed" / domain / f"{name}.mp4"
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(example_videos / f"{name}.mp4", target)
    names = list(CLIPS)
    pairs = [(a, b) for i, a in enumerate(names) for b in names[i + 1:]]
    gt = [{"video1": f"videos_trimmed/{a}.mp4", "video2": f"videos_trimmed/{b}.mp4",
           "conditioned_similarity": rating(a, b)} for a, b in pairs]
    (root / "gt_conditioned_similarities.json").write_text(json.dumps(gt))
    split = {"campus_01.mp4": ["campus_02.mp4", "box.mp4", "bikes.mp4"], "box.mp4": ["cup.mp4", "campus_03.mp4"]}
    (root / "to_be_ranked.json").write_text(json.dumps(split))
    return root, len(pairs)


def run(*args):
    result = CliRunner().invoke(app, ["bench", "run", *map(str, args), "--json", "--workers", "1"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_global_signal_scores_every_pair_in_released_format(dataset, tmp_path):
    root, n_pairs = dataset
    data = run("--dataset", root, "--out", tmp_path, "--indexer", "efficientnet-lite0")
    (sim_file,) = (tmp_path / "computed_similarities").rglob("*_similarities.json")
    scores = load_pair_scores(sim_file)
    assert len(scores) == n_pairs and all(0.0 <= s <= 1.0 for s in scores.values())
    corr = {r["concept"]: r for r in data["results"] if "rho" in r}
    assert set(corr) == {"main-action", "main-subjects", "main-objects", "location", "order-of-actions"}
    assert all(r["n"] == n_pairs for r in corr.values())
    assert corr["location"]["rho"] > 30  # the campus pieces look alike and are rated alike
    assert data["retrieval_ground_truth"] == "split made from the pair ratings (make-split)"
    rankings = list((tmp_path / "computed_retrieval_scores").rglob("*_ranking.json"))
    assert rankings and all(load_retrieval_scores(p) for p in rankings)


def test_reranker_writes_conditioned_scores_per_concept(dataset, tmp_path):
    root, n_pairs = dataset
    qwen = build_qwen_vl(tmp_path / "qwen")
    run("--dataset", root, "--out", tmp_path / "out", "--indexer", "efficientnet-lite0", "--reranker", qwen,
        "--frames", "2")
    files = sorted((tmp_path / "out" / "computed_conditioned_similarities").rglob("*_similarities.json"))
    assert [f.parent.parent.name for f in files] == sorted(
        ["Location", "Main_Action", "Main_Objects", "Main_Subjects", "Order_Of_Actions"])
    for f in files:
        assert f.parent.name.endswith("-f2")  # a non-default frame count is part of the model's name
        scores = load_pair_scores(f)
        assert len(scores) == n_pairs and all(1.0 <= s <= 5.0 for s in scores.values())


def test_frame_sweep_keeps_one_row_per_frame_count(dataset, tmp_path):
    root, _ = dataset
    data = run("--dataset", root, "--out", tmp_path, "--indexer", "efficientnet-lite0", "--frames", "2,8")
    models = {r["model"] for r in data["results"] if "rho" in r}
    assert len(models) == 2 and any(m.endswith("-f2") for m in models)


def test_missing_dataset_files_are_one_line_errors(tmp_path):
    result = CliRunner().invoke(app, ["bench", "run", "--dataset", str(tmp_path)])
    assert result.exit_code == 2 and "gt_conditioned_similarities.json" in result.stderr
    bad = CliRunner().invoke(app, ["bench", "run", "--dataset", str(tmp_path), "--frames", "a,b"])
    assert bad.exit_code == 2 and "--frames" in bad.stderr


def test_paper_protocol_builds_its_own_index_and_keeps_the_papers_folder_names(dataset, tmp_path):
    root, _ = dataset
    run("--dataset", root, "--out", tmp_path, "--indexer", "efficientnet-lite0", "--protocol", "paper")
    with Catalog(tmp_path / "index-paper-fdefault" / "catalog.duckdb", read_only=True) as catalog:
        assert catalog.setting("protocol") == "paper"
    available_indexers()
    # the paper's row names belong to its protocol; convis's fast frames are marked
    assert model_folder(INDEXERS, "dinov2", "facebook/dinov2-large", 1, 1, "") == "dinov2-large"
    assert model_folder(INDEXERS, "dinov2", "facebook/dinov2-large", 8, 8, "-fast") == "dinov2-large-fast"
    bad = CliRunner().invoke(app, ["bench", "run", "--dataset", str(root), "--protocol", "exact"])
    assert bad.exit_code == 2 and "--protocol" in bad.stderr
