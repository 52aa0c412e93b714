"""`convis bench captions` on the release's caption sets: release-format files, one table side by side, the
paper's values beside ours, one-line errors."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bench import paper
from bench.captions import caption_scores
from bench.loaders import load_gt_pairs
from indexers.base import INDEXERS
from indexers.text import read_captions
from retrieval.cli.bench import app
from retrieval.core.concepts import CONVIS_CONCEPTS
from tests.paths import CONVIS_BENCH

GT = CONVIS_BENCH / "gt_conditioned_similarities.json"
SETS = ("mPLUG-Owl3-7B-240728", "InternVL2_5-8B", "Qwen2.5-VL-7B-Instruct")  # the release's caption sets
CAPTIONS = CONVIS_BENCH / "captions" / SETS[0]
SLICE = 25  # pairs in the CLI tests: enough for a correlation, few enough to embed quickly

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("captions_embedded_once")]


@pytest.fixture(scope="module")
def full_scores() -> dict:
    """(cos+1)/2 of the mPLUG-Owl3 captions of every rated pair, embedded with the real all-MiniLM-L6-v2."""
    return caption_scores(SETS[0], load_gt_pairs(GT), read_captions(CAPTIONS), INDEXERS.create("text", device="cpu"))


def invoke(*args):
    return CliRunner().invoke(app, ["captions", *map(str, args)])


@pytest.fixture
def sliced(tmp_path) -> tuple[Path, list[Path]]:
    """The first SLICE rated pairs and, per set, a folder with just their captions."""
    pairs = json.loads(GT.read_text())[:SLICE]
    gt_path = tmp_path / "gt.json"
    gt_path.write_text(json.dumps(pairs))
    folders = []
    for name in SETS:
        folder = tmp_path / "captions" / name
        folder.mkdir(parents=True)
        for video in {Path(v).stem for p in pairs for v in (p["video1"], p["video2"])}:
            shutil.copy(CONVIS_BENCH / "captions" / name / f"{video}.txt", folder)
        folders.append(folder)
    return gt_path, folders


def captions_args(folders: list[Path]) -> list:
    return [a for f in folders for a in ("--captions", f)]


# ---------------------------------------------------------------- several caption folders


def test_three_folders_write_the_release_layout_with_the_single_folder_values(tmp_path, sliced):
    gt_path, folders = sliced
    out = tmp_path / "out"
    result = invoke(*captions_args(folders), "--pairs", gt_path, "--out", out, "--json")
    assert result.exit_code == 0, result.output
    for folder in folders:
        single = tmp_path / f"{folder.name}.json"
        assert invoke("--captions", folder, "--pairs", gt_path, "--out", single).exit_code == 0
        written = out / folder.name / f"{folder.name}_similarities.json"
        assert json.loads(written.read_text()) == json.loads(single.read_text())
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*.json")) == sorted(
        f"{n}/{n}_similarities.json" for n in SETS
    )
    rows = json.loads(result.stdout)["results"]
    assert sorted((r["model"], r["concept"]) for r in rows) == sorted((n, c) for n in SETS for c in paper.CONCEPTS)
    assert all(r["n"] == SLICE for r in rows)


def test_three_folders_print_one_table_with_a_row_per_concept(tmp_path, sliced):
    gt_path, folders = sliced
    result = invoke(*captions_args(folders), "--pairs", gt_path, "--out", tmp_path / "out")
    assert result.exit_code == 0, result.output
    assert result.stdout.count("correlation with human ratings") == 1
    lines = result.stdout.splitlines()
    for concept in paper.CONCEPTS:
        row = [line for line in lines if line.startswith(f"│ {CONVIS_CONCEPTS[concept]} ")]
        # per set rho and tau, each with Table 3's value and the difference: the paper's for mPLUG-Owl3,
        # the release's for InternVL2.5 and Qwen2.5-VL
        assert len(row) == 1 and len(re.findall(r"[+-]?\d+\.\d+", row[0])) == 3 * 3 * 2
    header = next(line for line in lines if line.startswith("┃ concept"))
    assert re.findall(r"paper|release", header) == ["paper", "release", "release"]
    assert paper.RELEASE_NOTE in " ".join(result.stdout.split())


def test_a_folder_without_captions_among_several_is_one_line(tmp_path, sliced):
    gt_path, folders = sliced
    empty = tmp_path / "empty"
    empty.mkdir()
    result = invoke(*captions_args([folders[0], empty, folders[1]]), "--pairs", gt_path, "--out", tmp_path / "out")
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [f"error: no .txt captions in {empty}"]
    assert "Traceback" not in result.output
    assert not (tmp_path / "out").exists()  # checked before anything is embedded or written


def test_several_folders_need_an_out_folder(tmp_path, sliced):
    gt_path, folders = sliced
    result = invoke(*captions_args(folders), "--pairs", gt_path, "--out", tmp_path / "o.json")
    assert result.exit_code == 2
    assert len(result.stderr.strip().splitlines()) == 1 and "is a folder" in result.stderr
    assert not (tmp_path / "o.json").exists()


def test_one_folder_with_an_out_folder_gets_the_release_layout(tmp_path, sliced):
    gt_path, folders = sliced
    assert invoke("--captions", folders[1], "--pairs", gt_path, "--out", tmp_path / "out").exit_code == 0
    assert (tmp_path / "out" / SETS[1] / f"{SETS[1]}_similarities.json").is_file()


def test_missing_captions_are_warned_about_per_set(tmp_path, sliced):
    gt_path, folders = sliced
    first = json.loads(gt_path.read_text())[0]
    (folders[2] / f"{Path(first['video1']).stem}.txt").unlink()
    result = invoke(*captions_args(folders), "--pairs", gt_path, "--out", tmp_path / "out", "--json")
    assert result.exit_code == 0, result.output
    warnings = [line for line in result.stderr.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1 and warnings[0].startswith(f"warning: {SETS[2]}: ")
    counts = {r["model"]: r["n"] for r in json.loads(result.stdout)["results"]}
    assert counts[SETS[0]] == SLICE and counts[SETS[2]] < SLICE


def test_two_folders_with_one_name_are_refused(tmp_path, sliced):
    gt_path, folders = sliced
    twin = tmp_path / "elsewhere" / folders[0].name
    shutil.copytree(folders[0], twin)
    result = invoke(*captions_args([folders[0], twin]), "--pairs", gt_path, "--out", tmp_path / "out")
    assert result.exit_code == 2 and "both named" in result.stderr


# ---------------------------------------------------------------- ours - paper


def test_the_table_shows_ours_minus_the_paper_with_its_sign(tmp_path, sliced):
    gt_path, folders = sliced
    args = ("--captions", folders[0], "--pairs", gt_path, "--out", tmp_path / "o.json")
    rows = {r["concept"]: r for r in json.loads(invoke(*args, "--json").stdout)["results"]}
    table = invoke(*args).stdout
    for concept, r in rows.items():
        rho_delta, tau_delta = r["rho"] - r["paper_rho"], r["tau"] - r["paper_tau"]
        assert r["paper_delta_rho"] == pytest.approx(rho_delta) and r["paper_delta_tau"] == pytest.approx(tau_delta)
        cells = f"{r['paper_rho']:.1f}\\s+│\\s+{rho_delta:+.1f}\\s+│.*{r['paper_tau']:.1f}\\s+│\\s+{tau_delta:+.1f}"
        assert re.search(cells, table), (concept, table)


# ---------------------------------------------------------------- one caption set


def test_cli_captions_writes_release_format(tmp_path, full_scores):
    # a small slice keeps the command quick; its values must equal the full run's
    pairs = json.loads(GT.read_text())[:25]
    gt_path = tmp_path / "gt.json"
    gt_path.write_text(json.dumps(pairs))
    folder = tmp_path / "mPLUG-Owl3-7B-240728"
    folder.mkdir()
    for p in pairs:
        for v in (p["video1"], p["video2"]):
            shutil.copy(CAPTIONS / f"{Path(v).stem}.txt", folder)
    out = tmp_path / "sbert_similarities.json"
    result = invoke("--captions", folder, "--pairs", gt_path, "--out", out, "--json")
    assert result.exit_code == 0, result.output
    written = json.loads(out.read_text())
    assert [(w["video1"], w["video2"]) for w in written] == [(p["video1"], p["video2"]) for p in pairs]
    for w in written:
        key = (Path(w["video1"]).name, Path(w["video2"]).name)
        assert w["similarity"] == pytest.approx(full_scores[key], abs=1e-5)
    results = json.loads(result.stdout)["results"]
    assert {r["concept"] for r in results} == set(paper.CONCEPTS)
    assert all(r["paper_name"] == "SBERT on mPLUG-Owl3 captions" and r["n"] == 25 for r in results)


@pytest.mark.parametrize("model", ["sentence-transformers/not-a-real-model", "dinov2", "no-such-family"])
def test_cli_captions_unusable_model_is_one_line(tmp_path, model):
    result = invoke("--captions", CAPTIONS, "--pairs", GT, "--out", tmp_path / "o.json", "--model", model)
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines()[-1].startswith("error: ")
    assert "Traceback" not in result.output
    assert not (tmp_path / "o.json").exists()


def test_cli_captions_missing_folder(tmp_path):
    result = invoke("--captions", tmp_path / "none", "--pairs", GT, "--out", tmp_path / "o.json")
    assert result.exit_code == 2
    assert "caption folder not found" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
