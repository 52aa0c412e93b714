"""Qwen3-VL end to end on the CPU: `convis compare -r qwen3-vl:<tiny>` rates a pair 1-5, `-r qwen3-vl-reranker:<tiny>`
scores it as P(yes) and says so, and `convis index --captioner qwen3-vl:<tiny>` writes captions."""

from __future__ import annotations

import json
import shutil

import pytest
from typer.testing import CliRunner

from retrieval.cli.app import app

runner = CliRunner()


@pytest.fixture
def clips(tmp_path, example_videos, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))  # a score cache without an index goes there
    folder = tmp_path / "videos"
    folder.mkdir()
    for name in ("box.mp4", "cup.mp4"):
        shutil.copy(example_videos / name, folder / name)
    return folder


def convis(*args):
    result = runner.invoke(app, [str(a) for a in args])
    assert result.exit_code == 0, result.output
    return result


@pytest.mark.slow
def test_compare_with_qwen3_vl_rates_the_pair_on_the_papers_scale(tiny_folders, clips):
    data = json.loads(convis("compare", clips / "box.mp4", clips / "cup.mp4", "-c", "location", "-r",
                             f"qwen3-vl:{tiny_folders['qwen3_vl']}", "--json").stdout)
    (row,) = data["concepts"]
    assert data["reranker"].startswith("qwen3-vl:") and "rating_scale" not in row
    assert 1.0 <= row["rating"] <= 5.0 and row["score"] == pytest.approx((row["rating"] - 1) / 4, abs=1e-4)


@pytest.mark.slow
def test_compare_with_the_yes_no_reranker_says_its_score_is_p_yes(tiny_folders, clips):
    model = f"qwen3-vl-reranker:{tiny_folders['qwen3_vl_reranker']}"
    args = ("compare", clips / "box.mp4", clips / "cup.mp4", "-c", "main-action", "-r", model)
    (row,) = json.loads(convis(*args, "--json").stdout)["concepts"]
    assert row["rating_scale"] == "P(yes)" and 0.0 <= row["rating"] <= 1.0
    assert row["score"] == pytest.approx(row["rating"], abs=1e-4)  # its own scale, not mapped as a 1-5 rating
    table = convis(*args).output
    assert "P(yes)" in table and "(r - 1) / 4" not in table


@pytest.mark.slow
def test_index_captions_with_qwen3_vl(tiny_folders, clips):
    said = convis("index", clips, "--captioner", f"qwen3-vl:{tiny_folders['qwen3_vl']}").output
    assert "caption" in said.lower()
