"""`convis bench run` on a small folder laid out like ConViS-Bench (real clips, real EfficientNet weights); runs
that caption, rerank or build extra indexes use three of its clips (tests/bench/few_clips.py)."""

import json
import shutil

import numpy as np
import pytest
from typer.testing import CliRunner

from bench.loaders import load_pair_scores, load_retrieval_scores
from bench.run import model_folder
from bench.tiny.dataset import CLIPS, build_dataset
from bench.tiny.vlm import build_qwen_vl
from indexers.base import INDEXERS
from indexers.factory import available_indexers
from retrieval.cli.app import app
from retrieval.store.catalog import Catalog
from tests.bench.few_clips import FEW_CLIPS


@pytest.fixture(scope="module")
def dataset(tmp_path_factory, example_videos):
    root = tmp_path_factory.mktemp("convis-bench")
    return root, build_dataset(root, example_videos)


@pytest.fixture(scope="module")
def few(few_clips):
    """The three-clip folder and its number of rated pairs."""
    return few_clips, len(json.loads((few_clips / "gt_conditioned_similarities.json").read_text()))


@pytest.fixture(scope="module")
def qwen(tmp_path_factory):
    """A tiny Qwen2-VL checkpoint (named ``qwen``), the module's reranker and captioner."""
    return build_qwen_vl(tmp_path_factory.mktemp("qwen2-vl") / "qwen")


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


def test_reranker_writes_conditioned_scores_per_concept(few, qwen, tmp_path):
    root, n_pairs = few
    run("--dataset", root, "--out", tmp_path / "out", "--indexer", "efficientnet-lite0", "--reranker", qwen,
        "--frames", "2")
    files = sorted((tmp_path / "out" / "computed_conditioned_similarities").rglob("*_similarities.json"))
    assert [f.parent.parent.name for f in files] == sorted(
        ["Location", "Main_Action", "Main_Objects", "Main_Subjects", "Order_Of_Actions"])
    for f in files:
        assert f.parent.name.endswith("-f2")  # a non-default frame count is part of the model's name
        scores = load_pair_scores(f)
        assert len(scores) == n_pairs and all(1.0 <= s <= 5.0 for s in scores.values())


def test_frame_sweep_keeps_one_row_per_frame_count(few, tmp_path):
    root, _ = few
    data = run("--dataset", root, "--out", tmp_path, "--indexer", "efficientnet-lite0", "--frames", "2,8")
    models = {r["model"] for r in data["results"] if "rho" in r}
    assert len(models) == 2 and any(m.endswith("-f2") for m in models)


def test_missing_dataset_files_are_one_line_errors(tmp_path):
    result = CliRunner().invoke(app, ["bench", "run", "--dataset", str(tmp_path)])
    assert result.exit_code == 2 and "gt_conditioned_similarities.json" in result.stderr
    bad = CliRunner().invoke(app, ["bench", "run", "--dataset", str(tmp_path), "--frames", "a,b"])
    assert bad.exit_code == 2 and "--frames" in bad.stderr


def test_paper_protocol_builds_its_own_index_and_keeps_the_papers_folder_names(few, tmp_path):
    root, _ = few
    run("--dataset", root, "--out", tmp_path, "--indexer", "efficientnet-lite0", "--protocol", "paper")
    with Catalog(tmp_path / "index-paper-fdefault" / "catalog.duckdb", read_only=True) as catalog:
        assert catalog.setting("protocol") == "paper"
    available_indexers()
    # the paper's row names belong to its protocol; convis's fast frames are marked
    assert model_folder(INDEXERS, "dinov2", "facebook/dinov2-large", 1, 1, "") == "dinov2-large"
    assert model_folder(INDEXERS, "dinov2", "facebook/dinov2-large", 8, 8, "-fast") == "dinov2-large-fast"
    bad = CliRunner().invoke(app, ["bench", "run", "--dataset", str(root), "--protocol", "exact"])
    assert bad.exit_code == 2 and "--protocol" in bad.stderr


# ---------------------------------------------------------------- every Table 3 family


@pytest.fixture(scope="module")
def table3_run(few, qwen, tmp_path_factory):
    """One run computing every family: captions by a tiny Qwen2-VL, EfficientNet and a tiny CLIP (video-to-video),
    SBERT over the captions (text-to-text), CLIPScore and VQAScore with a tiny LLaVA-OneVision (cross-modal)."""
    from bench.tiny.vlm import build_llava_onevision
    from tests.indexers.test_clip import _open_clip_with_vocabulary

    root, n_pairs = few
    base = tmp_path_factory.mktemp("table3")
    clip = _open_clip_with_vocabulary(base / "clip", 49408)
    llava = build_llava_onevision(base / "llava")
    out = base / "out"
    data = run("--dataset", root, "--out", out, "-i", "efficientnet-lite0", "-i", f"clip:{clip}",
               "--captioner", qwen, "--vqascore", llava)
    return out, data, n_pairs, clip


def test_one_run_writes_every_table3_family_in_the_released_layout(table3_run):
    out, data, n_pairs, _ = table3_run
    captions = out / "captions" / "qwen2-vl-qwen"
    assert len(list(captions.glob("*.txt"))) == len(FEW_CLIPS)  # the captioner's captions, as the release has them
    sims = out / "computed_similarities"
    # video-to-video and SBERT folders are named alone; cross-modal ones carry the caption set's name
    assert sorted(str(p.relative_to(sims)) for p in sims.rglob("*_similarities.json")) == sorted([
        "efficientnet-lite0/efficientnet-lite0_similarities.json",
        "clip-clip/clip-clip_similarities.json",
        "qwen2-vl-qwen/qwen2-vl-qwen_similarities.json",
        "clip-clip_qwen2-vl-qwen/clip-clip_similarities.json",
        "llava-onevision-llava-fp32-b4_qwen2-vl-qwen/llava-onevision-llava-fp32-b4_similarities.json",
    ])
    for path in sims.rglob("*_similarities.json"):
        released = json.loads(path.read_text())
        assert [set(r) for r in released] == [{"video1", "video2", "similarity"}] * n_pairs
        assert all(0.0 <= r["similarity"] <= 1.0 for r in released)
    models = {r["model"] for r in data["results"] if "rho" in r}
    assert {"clip-clip_qwen2-vl-qwen", "llava-onevision-llava-fp32-b4_qwen2-vl-qwen", "qwen2-vl-qwen"} <= models


def test_clipscore_and_sbert_files_hold_the_references_formulas(table3_run):
    from sentence_transformers import SentenceTransformer

    from indexers.text import MINILM, weights_path

    out, _, _, clip = table3_run
    captions = {p.stem: p.read_text().strip() for p in (out / "captions" / "qwen2-vl-qwen").glob("*.txt")}
    (index,) = out.glob("index-fast-fdefault-by-*")  # the captioner's own index
    with Catalog(index / "catalog.duckdb", read_only=True) as catalog:
        video = {p.split("/")[-1][:-4]: catalog.unit_vectors(p, f"clip:{clip}")[0] for p in catalog.file_states()}
        text = {p.split("/")[-1][:-4]: catalog.unit_vectors(p, f"clip:{clip}#caption")[0]
                for p in catalog.file_states()}
    sbert = SentenceTransformer(weights_path(MINILM), device="cpu")
    for row in json.loads((out / "computed_similarities" / "clip-clip_qwen2-vl-qwen"
                           / "clip-clip_similarities.json").read_text()):
        a, b = (v.split("/")[-1][:-4] for v in (row["video1"], row["video2"]))
        cos = lambda x, y: float(x @ y / np.linalg.norm(x) / np.linalg.norm(y))  # noqa: E731
        assert row["similarity"] == pytest.approx(((cos(video[a], text[b]) + cos(video[b], text[a])) / 2 + 1) / 2,
                                                  abs=1e-5)
    for row in json.loads((out / "computed_similarities" / "qwen2-vl-qwen"
                           / "qwen2-vl-qwen_similarities.json").read_text())[:5]:
        a, b = (captions[v.split("/")[-1][:-4]] for v in (row["video1"], row["video2"]))
        va, vb = sbert.encode([a, b])
        assert row["similarity"] == pytest.approx((cos(va, vb) + 1) / 2, abs=1e-5)


def test_bench_correlation_reads_every_written_file_back(table3_run, few):
    out, data, n_pairs, _ = table3_run
    root, _ = few
    result = CliRunner().invoke(app, ["bench", "correlation", "--gt", str(root / "gt_conditioned_similarities.json"),
                                      "--similarities", str(out / "computed_similarities"), "--json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)["results"]
    ran = {(r["model"], r["concept"]): (r["rho"], r["tau"]) for r in data["results"] if "rho" in r}
    read = {(r["model"], r["concept"]): (r["rho"], r["tau"]) for r in rows}
    assert read == ran and len({m for m, _ in read}) == 5 and all(r["n"] == n_pairs for r in rows)


def captioned_copy(root, tmp_path, caption_set: str, caption) -> object:
    """A copy of the dataset with ``captions/<caption_set>/<id>.txt`` files, ``caption(id)`` each."""
    copy = tmp_path / "ds"
    shutil.copytree(root, copy)
    folder = copy / "captions" / caption_set
    folder.mkdir(parents=True)
    for video in copy.glob("videos_trimmed/*/*.mp4"):
        (folder / f"{video.stem}.txt").write_text(caption(video.stem) + "\n")
    return copy


def test_captions_from_a_folder_name_the_text_and_cross_modal_rows(dataset, tmp_path):
    """Released-style captions (captions/<set>/<id>.txt): the SBERT row is the set's name, CLIPScore's folder too."""
    from tests.indexers.test_clip import _open_clip_with_vocabulary

    root, n_pairs = dataset
    copy = captioned_copy(root, tmp_path, "mPLUG-Owl3-7B-240728",
                          lambda name: f"a video of {name.replace('_', ' ')} in the {CLIPS[name]}")
    clip = _open_clip_with_vocabulary(tmp_path / "clip", 49408)
    run("--dataset", copy, "--out", tmp_path / "out", "-i", f"clip:{clip}", "--vqascore", "none")
    sims = tmp_path / "out" / "computed_similarities"
    assert sorted(p.parent.name for p in sims.rglob("*_similarities.json")) == [
        "clip-clip", "clip-clip_mPLUG-Owl3-7B-240728", "mPLUG-Owl3-7B-240728"]
    assert len(load_pair_scores(sims / "mPLUG-Owl3-7B-240728" / "mPLUG-Owl3-7B-240728_similarities.json")) == n_pairs


def test_vqascore_file_holds_the_mean_yes_probability_of_the_reference_questions(table3_run, few):
    from rerankers.factory import create_reranker
    from rerankers.prompts.vqascore import pair_questions
    from retrieval.media.video_decoder import VideoDecoder

    out, _, _, _ = table3_run
    root, _ = few
    llava = next(p for p in out.parent.iterdir() if p.name == "llava")
    model = create_reranker(str(llava), device="cpu")
    captions = {p.stem: p.read_text().strip() for p in (out / "captions" / "qwen2-vl-qwen").glob("*.txt")}
    files = {p.stem: p for p in root.rglob("*.mp4")}
    decoder = VideoDecoder()
    rows = json.loads((out / "computed_similarities" / "llava-onevision-llava-fp32-b4_qwen2-vl-qwen"
                       / "llava-onevision-llava-fp32-b4_similarities.json").read_text())
    for row in rows[:3]:
        a, b = (v.split("/")[-1][:-4] for v in (row["video1"], row["video2"]))
        q1, q2 = pair_questions(captions[a], captions[b])  # video 1 asked about caption 2, video 2 about caption 1
        frames = [decoder.sample_span(files[v], model.frame_spec, 0.0, None).pixels for v in (a, b)]
        p1, p2 = model.yes_probabilities(frames, [q1, q2], prepared=True)
        assert row["similarity"] == pytest.approx((p1 + p2) / 2, abs=1e-6)


@pytest.mark.slow
def test_a_captioners_run_never_reads_caption_files_of_an_earlier_run(few, qwen, tmp_path):
    root, _ = few
    copy = captioned_copy(root, tmp_path, "files", lambda name: f"FILE CAPTION of {name}")
    out = tmp_path / "out"
    run("--dataset", copy, "--out", out, "-i", "efficientnet-lite0", "--vqascore", "none")
    run("--dataset", copy, "--out", out, "-i", "efficientnet-lite0", "--captioner", qwen,
        "--vqascore", "none")
    written = [p.read_text() for p in (out / "captions" / "qwen2-vl-qwen").glob("*.txt")]
    assert len(written) == len(FEW_CLIPS) and not any("FILE CAPTION" in text for text in written)


@pytest.mark.slow
def test_a_captioners_captions_are_named_by_the_protocol_that_made_them(few, tmp_path, monkeypatch, empty_cache):
    """Paper-protocol captions (the reference's captioning rule) take the release's folder name; fast ones,
    made from the reranking frames, are marked as the other fast folders are."""
    import rerankers.qwen

    root, _ = few
    # a tiny Qwen2.5-VL cached as the paper's checkpoint: its hub id names the release's folder
    hub = empty_cache / "models--Qwen--Qwen2.5-VL-7B-Instruct"
    build_qwen_vl(hub / "snapshots" / "0123abcd", model_type="qwen2_5_vl")
    (hub / "refs").mkdir()
    (hub / "refs" / "main").write_text("0123abcd")
    qwen = "Qwen/Qwen2.5-VL-7B-Instruct"
    # the paper's 1024 new tokens and up to 768 frames, cut short for a tiny model on a CPU
    monkeypatch.setattr(rerankers.qwen, "CHAT_TOKENS", 4)
    monkeypatch.setattr(rerankers.qwen, "_FPS_MAX_FRAMES", 4)
    # the family's paper precision for the occasion: any machine runs it (another one would be named, -fp32)
    monkeypatch.setattr(rerankers.qwen.QwenReranker, "paper_dtype", "fp32")
    out = tmp_path / "out"
    for protocol in ("fast", "paper"):
        run("--dataset", root, "--out", out, "-i", "efficientnet-lite0", "--captioner", qwen, "--vqascore", "none",
            "--protocol", protocol)
    folders = {p.name: len(list(p.glob("*.txt"))) for p in (out / "captions").iterdir()}
    assert folders == {"Qwen2.5-VL-7B-Instruct": len(FEW_CLIPS), "Qwen2.5-VL-7B-Instruct-fast": len(FEW_CLIPS)}
    (paper,) = out.glob("index-paper-fdefault-by-*")
    with Catalog(paper / "catalog.duckdb", read_only=True) as catalog:
        versions = {v for (v,) in catalog.db.execute("SELECT DISTINCT prompt_version FROM descriptions").fetchall()}
    assert len(versions) == 1 and "|paper|frames=qwen-fps@1:4" in versions.pop()
