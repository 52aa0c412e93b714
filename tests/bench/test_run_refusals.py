"""`convis bench run --protocol paper` refuses, before indexing anything, an LMM it cannot run as the paper did."""

import pytest
from typer.testing import CliRunner

from bench.tiny.dataset import build_dataset
from retrieval.cli.app import app


@pytest.fixture(scope="module")
def dataset(tmp_path_factory, example_videos):
    root = tmp_path_factory.mktemp("convis-bench")
    build_dataset(root, example_videos)
    return root


@pytest.mark.parametrize("asked", [
    ["--reranker", "llava-video"], ["--vqascore", "llava-video"],
    ["--captioner", "llava-video", "--vqascore", "none"],  # as the captioner alone
    # its weights named under another family are the same weights
    ["--reranker", "llava-onevision:llava-hf/LLaVA-Video-7B-Qwen2-hf"],
])
def test_paper_run_refuses_llava_video_in_one_line_before_indexing(dataset, tmp_path, asked):
    result = CliRunner().invoke(app, ["bench", "run", "--dataset", str(dataset), "--out", str(tmp_path),
                                      "--indexer", "efficientnet-lite0", "--protocol", "paper", *asked,
                                      "--workers", "1"])
    assert result.exit_code == 2, result.output
    (line,) = [text for text in result.stderr.splitlines() if "llava-video" in text]
    assert "mm_newline_position 'grid'" in line and "--protocol fast" in line
    assert not list(tmp_path.rglob("catalog.duckdb"))  # nothing was indexed
